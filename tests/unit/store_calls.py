"""bench_store's and bench_search's actions as the modules run them: the params through the
module's argument spec (types, defaults, required_if, unknown keys refused) and then its
run_action, so that what a test passes is what Ansible would pass."""
import bench_search
import bench_store
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator


def _action(module, action, params):
    checked = ArgumentSpecValidator(module.ARGUMENT_SPEC, required_if=module.REQUIRED_IF).validate(
        {**params, "action": action})
    if checked.error_messages:
        raise AssertionError(f"{module.__name__} action={action}: {checked.error_messages}")
    return module.run_action(checked.validated_parameters)


def store_action(action, params):
    """The result of bench_store action=action with params (a dict of the module's options)."""
    return _action(bench_store, action, params)


def search_action(action, params):
    """The result of bench_search action=action with params (a dict of the module's options)."""
    return _action(bench_search, action, params)
