"""module_utils/multinode.py and the sglang_multinode_info module: ranks, the init address,
the flags per node, and every bad setting named with its fix."""
import pytest
import sglang_multinode_info
from ansible.module_utils.multinode import MultinodeError, plan

NODES = ["gpu-a", "gpu-b"]
ADDRS = {"gpu-a": "10.0.0.11", "gpu-b": "10.0.0.12"}
IFS = {"gpu-a": "ens7", "gpu-b": "ens8"}
ARGS = {"model-path": "m", "tp-size": 16, "port": 30000}


def two(host, **kw):
    opts = {"nnodes": 2, "nodes": NODES, "server_args": ARGS, "dist_init_port": 50000,
            "addresses": ADDRS, "ifnames": IFS} | kw
    return plan(host, opts.pop("nnodes"), opts.pop("nodes"), opts.pop("server_args"), **opts)


def test_each_node_gets_the_same_flags_but_its_rank_and_its_own_interface():
    a, b = two("gpu-a"), two("gpu-b")
    assert a["args"] == {"nnodes": 2, "node-rank": 0, "dist-init-addr": "10.0.0.11:50000"}
    assert b["args"] == {"nnodes": 2, "node-rank": 1, "dist-init-addr": "10.0.0.11:50000"}
    assert (a["is_rank0"], b["is_rank0"], a["rank0"], b["rank0"]) == (True, False, "gpu-a", "gpu-a")
    assert a["gpus_per_node"] == b["gpus_per_node"] == 8
    assert b["env"] == {"NCCL_SOCKET_IFNAME": "ens8", "GLOO_SOCKET_IFNAME": "ens8"}


def test_rank_follows_the_order_of_the_node_group_and_pp_counts():
    nodes = ["n3", "n1", "n2", "n0"]
    addrs = {"n3": "fd00::3"}
    ifs = dict.fromkeys(nodes, "ib0")
    got = [plan(h, 4, nodes, {"tp-size": 8, "pp-size": 2}, 29500, addrs, ifs) for h in nodes]
    assert [g["node_rank"] for g in got] == [0, 1, 2, 3]
    assert {g["dist_init_addr"] for g in got} == {"[fd00::3]:29500"}
    assert {g["gpus_per_node"] for g in got} == {4}


def test_a_single_node_needs_no_port_address_or_group():
    got = plan("solo", 1, [], {"tp-size": 8})
    assert got["args"] == {} and got["env"] == {} and got["is_rank0"] and got["gpus_per_node"] == 8


@pytest.mark.parametrize(("kw", "words"), [
    ({"nnodes": 3}, ["sglang_server_nnodes=3 does not divide tp-size x pp-size = 16",
                     "divisor of 16 (2, 4, 8, 16)", "multiple of 3"]),
    ({"nnodes": 0}, ["sglang_server_nnodes must be a positive integer"]),
    ({"nnodes": "two"}, ["sglang_server_nnodes must be a positive integer"]),
    ({"nnodes": 4}, ["sglang_server_nnodes=4 but the node group", "has 2 host(s)", "add hosts"]),
    ({"nodes": ["gpu-a", "gpu-b", "gpu-c"]}, ["has 3 host(s)", "list the 2 hosts of this server"]),
    ({"nodes": ["gpu-a", "gpu-a"]}, ["sglang_server_nodes lists gpu-a more than once"]),
    ({"nodes": ["gpu-b", "gpu-c"]}, ["gpu-a is not in the node group"]),
    ({"dist_init_port": None}, ["sglang_server_dist_init_port is not set", "e.g. 50000"]),
    ({"dist_init_port": ""}, ["sglang_server_dist_init_port is not set"]),
    ({"dist_init_port": 70000}, ["sglang_server_dist_init_port must be a TCP port (1-65535)"]),
    ({"dist_init_port": 30000}, ["is the server's HTTP port"]),
    ({"addresses": {}}, ["no address for rank 0 (gpu-a)", "sglang_server_dist_init_host"]),
    ({"ifnames": {"gpu-b": "x"}}, ["no inter-node network interface for gpu-a", "sglang_server_socket_ifname"]),
    ({"server_args": ARGS | {"node-rank": 1}}, ["sglang_server_args sets node-rank", "sglang_server_nnodes"]),
])
def test_bad_settings_name_the_variable_and_the_fix(kw, words):
    with pytest.raises(MultinodeError) as err:
        two("gpu-a", **kw)
    for word in words:
        assert word in str(err.value)


def test_a_managed_flag_is_refused_on_a_single_node_too():
    with pytest.raises(MultinodeError, match="sglang_server_args sets nnodes"):
        plan("solo", 1, [], {"tp-size": 8, "nnodes": 2})


def test_the_module_returns_the_plan_and_fails_with_the_message(run_module):
    got = run_module(sglang_multinode_info, host="gpu-b", nnodes="2", nodes=NODES, server_args=ARGS,
                     dist_init_port="50000", addresses=ADDRS, ifnames=IFS)
    assert (got["rc_exit"], got["changed"], got["node_rank"], got["dist_init_addr"]) == (0, False, 1, "10.0.0.11:50000")
    bad = run_module(sglang_multinode_info, host="gpu-b", nnodes=3, nodes=NODES, server_args=ARGS,
                     dist_init_port=50000, addresses=ADDRS, ifnames=IFS)
    assert bad["rc_exit"] == 1 and "does not divide" in bad["msg"]


def test_sglangs_alias_counts_as_the_arg_it_stands_for():
    """tensor-parallel-size is tp-size to SGLang's parser: the GPU count (the preflight's) counts it,
    and the messages name the arg as written."""
    single = plan("gpu-a", 1, ["gpu-a"], {"model-path": "m", "tensor-parallel-size": 16})
    assert single["gpus_per_node"] == 16 and single["sized_by"] == "tensor-parallel-size 16 x pp-size 1"
    assert two("gpu-b", server_args={"tensor-parallel-size": 8, "pipeline-parallel-size": 2})["gpus_per_node"] == 8
    with pytest.raises(MultinodeError, match="sglang_server_args tensor-parallel-size must be a positive integer, "
                                             "got 'eight'"):
        plan("gpu-a", 1, ["gpu-a"], {"tensor-parallel-size": "eight"})
    with pytest.raises(MultinodeError, match="sglang_server_args sets nccl-init-addr: remove it"):
        two("gpu-a", server_args={"tp-size": 16, "nccl-init-addr": "10.0.0.1:5000"})
