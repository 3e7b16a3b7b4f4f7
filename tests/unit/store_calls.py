"""bench_store's actions as the module runs them: the params through its argument spec (types,
defaults, required_if, unknown keys refused) and then run_action, so that what a test passes is
what Ansible would pass."""
import bench_store
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator


def store_action(action, params):
    """The result of bench_store action=action with params (a dict of the module's options)."""
    checked = ArgumentSpecValidator(bench_store.ARGUMENT_SPEC, required_if=bench_store.REQUIRED_IF).validate(
        {**params, "action": action})
    if checked.error_messages:
        raise AssertionError(f"bench_store action={action}: {checked.error_messages}")
    return bench_store.run_action(checked.validated_parameters)
