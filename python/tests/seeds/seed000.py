# The code cells of seed 000 ("CUDNN JIT Batch MatMul"), verbatim but for the first line,
# `import cudnn` -> `import dnnjit as cudnn`. Each "# In[N]:" line starts a cell;
# tests/test_seeds.py runs the cells in order. Runs as a script too (needs a GPU and torch).


# In[1]:
import dnnjit as cudnn
import torch

print(f"cuDNN frontend version: {cudnn.__version__}")
print(f"cuDNN backend version: {cudnn.backend_version()}")

# Check GPU compute capability (need >= 8.0 for JIT)
capability = torch.cuda.get_device_capability()
print(f"GPU: {torch.cuda.get_device_name()}")
print(f"Compute capability: {capability[0]}.{capability[1]}")
assert capability[0] >= 8, "cuDNN JIT requires compute capability >= 8.0 (Ampere+)"

torch.manual_seed(42)


# In[2]:
handle = cudnn.create_handle()

# Define dimensions: A[B,M,K] @ B[B,K,N] = C[B,M,N]
BATCH, M, K, N = 4, 64, 128, 64

@cudnn.jit(heur_modes=[cudnn.heur_mode.A])
def create_matmul_graph():
    with cudnn.graph(
        handle=handle,
        name="jit_matmul_graph",
        io_data_type=cudnn.data_type.HALF,
        compute_data_type=cudnn.data_type.FLOAT,
    ) as (g, __unknown_var__):
        # Input tensors with row-major strides
        A = g.tensor(
            name="A",
            dim=[BATCH, M, K],
            stride=[M * K, K, 1],
            data_type=cudnn.data_type.HALF,
        )
        B_mat = g.tensor(
            name="B",
            dim=[BATCH, K, N],
            stride=[K * N, N, 1],
            data_type=cudnn.data_type.HALF,
        )
        
        # Matmul operation
        C = g.matmul(A, B_mat, compute_data_type=cudnn.data_type.FLOAT)
        C.set_output(True)
        tensor_uids = [A, B_mat, C]
        return g, tensor_uids

# Build the graph (JIT compilation happens here)
graph, (A_uid, B_uid, C_uid) = create_matmul_graph()
print(f"Graph built. Tensor UIDs: A={A_uid}, B={B_uid}, C={C_uid}")


# In[3]:
# Verify JIT is being used
behavior_notes = graph.get_behavior_notes()
print(f"Behavior notes: {behavior_notes}")

is_jit = cudnn.behavior_note.RUNTIME_COMPILATION in behavior_notes
print(f"Using JIT (RUNTIME_COMPILATION): {is_jit}")

# Show available execution plans
n_plans = graph.get_execution_plan_count()
print(f"\nExecution plans available: {n_plans}")
for i in range(n_plans):
    notes = graph.get_behavior_notes_for_plan_at_index(i)
    name = graph.get_plan_name_at_index(i)
    is_jit = cudnn.behavior_note.RUNTIME_COMPILATION in notes
    print(f"  Plan {i}: {name[:50]}... JIT={is_jit}")


# In[4]:
# Print graph structure
print(graph)


# In[5]:
# Allocate GPU tensors
A_gpu = torch.randn(BATCH, M, K, device="cuda", dtype=torch.float16)
B_gpu = torch.randn(BATCH, K, N, device="cuda", dtype=torch.float16)
C_gpu = torch.empty(BATCH, M, N, device="cuda", dtype=torch.float16)
workspace = torch.empty(graph.get_workspace_size(), device="cuda", dtype=torch.uint8)

print(f"Workspace size: {graph.get_workspace_size()} bytes")

# Create variant pack using UIDs (returned by @cudnn.jit decorator)
variant_pack = {A_uid: A_gpu, B_uid: B_gpu, C_uid: C_gpu}


# In[6]:
# Execute the graph using UIDs
graph.execute(variant_pack, workspace, handle=handle)

# Verify against PyTorch
C_ref = torch.bmm(A_gpu, B_gpu)
max_diff = (C_gpu - C_ref).abs().max().item()

print(f"Output shape: {C_gpu.shape}")
print(f"Max diff vs torch.bmm: {max_diff}")
assert max_diff < 1e-2, f"Results don't match! Max diff: {max_diff}"
print("✓ Results match!")


# In[7]:
import time

# Warmup
for _ in range(10):
    graph.execute(variant_pack, workspace, handle=handle)
torch.cuda.synchronize()

# Time cuDNN
n_iters = 100
torch.cuda.synchronize()
start = time.perf_counter()
for _ in range(n_iters):
    graph.execute(variant_pack, workspace, handle=handle)
torch.cuda.synchronize()
cudnn_time = (time.perf_counter() - start) / n_iters * 1000

# Time PyTorch
torch.cuda.synchronize()
start = time.perf_counter()
for _ in range(n_iters):
    C_ref = torch.bmm(A_gpu, B_gpu)
torch.cuda.synchronize()
torch_time = (time.perf_counter() - start) / n_iters * 1000

print(f"cuDNN:   {cudnn_time:.4f} ms")
print(f"PyTorch: {torch_time:.4f} ms")
print(f"Speedup: {torch_time/cudnn_time:.2f}x")


# In[8]:
# Cleanup
cudnn.destroy_handle(handle)
