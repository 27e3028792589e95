"""Condition types and reasons: the vocabulary of api.md section 3.

Reasons are CamelCase constants. Their meaning, for a namespace user, is in docs/faq.md.
"""

from __future__ import annotations

from typing import Final

# Condition types, in the order they are answered.
CLASS_RESOLVED: Final = "ClassResolved"
MODEL_RESOLVED: Final = "ModelResolved"
PLANNED: Final = "Planned"
WORKLOAD_READY: Final = "WorkloadReady"
READY: Final = "Ready"
SCALING_HEALTHY: Final = "ScalingHealthy"

CHAIN: Final[tuple[str, ...]] = (CLASS_RESOLVED, MODEL_RESOLVED, PLANNED, WORKLOAD_READY, READY)
ALL_CONDITIONS: Final[tuple[str, ...]] = (*CHAIN, SCALING_HEALTHY)

# Reasons while a condition is not yet known.
AWAITING: Final = "Awaiting"  # an earlier condition of the chain is not True yet
RECONCILING: Final = "Reconciling"  # the first reconcile has not decided it yet

# ClassResolved
RESOLVED: Final = "Resolved"
CLASS_NOT_FOUND: Final = "ClassNotFound"
CLASS_NOT_READY: Final = "ClassNotReady"

# ModelResolved (True reason: Resolved)
MODEL_NOT_FOUND: Final = "ModelNotFound"
MODEL_NOT_READY: Final = "ModelNotReady"
MODEL_ACCESS_DENIED: Final = "ModelAccessDenied"
AUTH_SECRET_NOT_FOUND: Final = "AuthSecretNotFound"
MODEL_SOURCE_UNAVAILABLE: Final = "ModelSourceUnavailable"
ENDPOINT_TYPE_POLICY_CONFLICT: Final = "EndpointTypePolicyConflict"
FORMAT_NOT_ALLOWED: Final = "FormatNotAllowed"
PARAMETER_COUNT_NOT_ALLOWED: Final = "ParameterCountNotAllowed"
CATALOG_DISABLED: Final = "CatalogDisabled"
# Not in api.md's table but needed: the class's allowedSources excludes the order's source.
SOURCE_NOT_ALLOWED: Final = "SourceNotAllowed"
# Not in api.md's table: the model's config.json needs code of its repository (`auto_map`) and no
# recipe of the class opts in with `trustRemoteCode`.
REMOTE_CODE_NOT_ALLOWED: Final = "RemoteCodeNotAllowed"

# Planned
PLANNED_OK: Final = "Planned"
LAUNCH_PLAN_IN_FORCE: Final = "LaunchPlanInForce"
NO_CAPACITY: Final = "NoCapacity"
NO_ACCELERATOR_WITH_ENOUGH_MEMORY: Final = "NoAcceleratorWithEnoughMemory"
QUANTIZATION_MISMATCH: Final = "QuantizationMismatch"
NO_COMPATIBLE_RUNTIME_AVAILABLE: Final = "NoCompatibleRuntimeAvailable"
RESOURCE_CLAIM_EXHAUSTED: Final = "ResourceClaimExhausted"
PLACEMENT_UNDECIDABLE: Final = "PlacementUndecidable"

# WorkloadReady
AVAILABLE: Final = "Available"
PROGRESSING: Final = "Progressing"
UNSCHEDULABLE: Final = "Unschedulable"
WORKLOAD_FAILED: Final = "WorkloadFailed"
NAME_CONFLICT: Final = "NameConflict"  # api.md section 6: a name the order writes is held by another
SCALED_TO_ZERO: Final = "ScaledToZero"  # api.md section 6: at zero or waking (also Ready's reason then)

# Ready
SERVING: Final = "Serving"
HEALTH_CHECK_FAILED: Final = "HealthCheckFailed"
SERVICE_UNHEALTHY: Final = "ServiceUnhealthy"
ACTIVATOR_UNAVAILABLE: Final = "ActivatorUnavailable"  # at zero, and no activator holds its requests

# ScalingHealthy
SCALING_HEALTHY_OK: Final = "ScalingHealthy"
SCALE_UP_BLOCKED: Final = "ScaleUpBlocked"

# Reasons no waiting can fix: an order carrying one is Failed (api.md section 3).
TERMINAL: Final[frozenset[str]] = frozenset(
    {
        MODEL_NOT_FOUND,
        MODEL_ACCESS_DENIED,
        ENDPOINT_TYPE_POLICY_CONFLICT,
        FORMAT_NOT_ALLOWED,
        PARAMETER_COUNT_NOT_ALLOWED,
        CATALOG_DISABLED,
        SOURCE_NOT_ALLOWED,
        REMOTE_CODE_NOT_ALLOWED,
        QUANTIZATION_MISMATCH,
        NO_COMPATIBLE_RUNTIME_AVAILABLE,
        PLACEMENT_UNDECIDABLE,
    }
)
