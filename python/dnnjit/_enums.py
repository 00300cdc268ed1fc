"""The enumerations, named as in the cuDNN frontend (cudnn.data_type.HALF, ...).

data_type, pointwise_mode and reduction_mode are read from the library's own name
tables (the X-macros of dnnjit.h), so they always match the loaded library. The small
enums that have no name function in the C API are written out here with the values of
dnnjit.h.
"""
import enum

from ._lib import lib


def _from_library(enum_name, name_of):
    members = []
    for value in range(256):
        name = name_of(value)
        if not name:
            break
        members.append((name.decode(), value))
    return enum.IntEnum(enum_name, members, module=__name__.rpartition(".")[0])


data_type = _from_library("data_type", lib.dnnjit_data_type_name)
data_type.__doc__ = "Element types of tensors and of computation (dnnjit_data_type_t)."

pointwise_mode = _from_library("pointwise_mode", lib.dnnjit_pointwise_mode_name)
pointwise_mode.__doc__ = "Pointwise operations (dnnjit_pointwise_mode_t); arity() gives the input count."
pointwise_mode.arity = lambda self: lib.dnnjit_pointwise_mode_arity(self)

reduction_mode = _from_library("reduction_mode", lib.dnnjit_reduction_mode_name)
reduction_mode.__doc__ = "Reductions (dnnjit_reduction_mode_t)."


class heur_mode(enum.IntEnum):
    """Heuristic modes for create_execution_plans (dnnjit_heur_mode_t)."""
    A = 0
    B = 1
    FALLBACK = 2


class build_plan_policy(enum.IntEnum):
    """Which plans build_plans builds (dnnjit_build_plan_policy_t)."""
    HEURISTICS_CHOICE = 0
    ALL = 1


class behavior_note(enum.IntEnum):
    """Behavior notes of a plan; the values are the bits of dnnjit's notes."""
    RUNTIME_COMPILATION = 1 << 0
    REDUCED_PRECISION = 1 << 1
    NONDETERMINISTIC = 1 << 2


class numerical_note(enum.IntEnum):
    """cuDNN's numerical notes, with cuDNN's values, for deselect_numeric_notes. dnnjit's
    plans report two of them, as behavior notes: DOWN_CONVERT_INPUTS is REDUCED_PRECISION
    (FLOAT inputs rounded to TF32) and NONDETERMINISTIC is NONDETERMINISTIC."""
    TENSOR_CORE = 1
    DOWN_CONVERT_INPUTS = 2
    REDUCED_PRECISION_REDUCTION = 3
    FFT = 4
    NONDETERMINISTIC = 5
    WINOGRAD = 6
    WINOGRAD_TILE_4x4 = 7
    WINOGRAD_TILE_6x6 = 8
    WINOGRAD_TILE_13x13 = 9
    STRICT_NAN_PROP = 10


# The behavior note of dnnjit's that each numerical note a plan can have is reported as.
NUMERICAL_NOTE_BEHAVIOR = {
    numerical_note.DOWN_CONVERT_INPUTS: behavior_note.REDUCED_PRECISION,
    numerical_note.NONDETERMINISTIC: behavior_note.NONDETERMINISTIC,
}


class norm_forward_phase(enum.IntEnum):
    """Phase of layernorm / rmsnorm (dnnjit_norm_phase_t)."""
    INFERENCE = 0
    TRAINING = 1


class softmax_stats(enum.IntEnum):
    """Statistics a softmax writes besides its output (dnnjit_softmax_stats_t)."""
    NONE = 0
    LOG_SUM_EXP = 1
    MAX_SUM_EXP = 2


def notes_from_bits(bits):
    """The behavior_note members whose bits are set."""
    return [note for note in behavior_note if bits & note]
