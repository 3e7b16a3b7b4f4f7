"""Wrong multi-node settings (sglang_server_nnodes over two hosts) stop deploy.yml in its first
play, on every node, with a message that names the variable and the fix: no task of the deploy
play runs. One run per case (the variables are the group's), two at a time."""
from concurrent.futures import ThreadPoolExecutor

import pytest
from harness import BASE_VARS, local_standins, run_playbook, tasks_on

DEPLOY_PLAY = "Deploy the SGLang server"
TP16 = {**BASE_VARS["sglang_server_args"], "tp-size": 16}
# A free port, so never the server's (deploy.yml runs in check mode: nothing binds or dials it).
(INIT_PORT,) = local_standins.free_ports(1)

CASES = {
    "nnodes_not_dividing_tp": ({"sglang_server_nnodes": 3, "sglang_server_args": TP16},
                               "sglang_server_nnodes=3 does not divide tp-size x pp-size = 16"),
    "more_nnodes_than_hosts": ({"sglang_server_nnodes": 4, "sglang_server_args": TP16,
                                "sglang_server_dist_init_port": INIT_PORT},
                               "sglang_server_nnodes=4 but the node group (sglang_server_nodes"),
    "no_init_port": ({"sglang_server_nnodes": 2, "sglang_server_args": TP16},
                     "sglang_server_dist_init_port is not set"),
    "node_rank_in_args": ({"sglang_server_nnodes": 2, "sglang_server_dist_init_port": INIT_PORT,
                           "sglang_server_args": {**TP16, "node-rank": 1}},
                          "sglang_server_args sets node-rank: remove it"),
    "gpus_per_node_mismatch": ({"sglang_server_nnodes": 2, "sglang_server_dist_init_port": INIT_PORT},
                               "has 8 GPU(s), but as node 0 of a 2-node server it runs tp-size x pp-size / nnodes = 4"),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    def one(name):
        host_vars = CASES[name][0]
        return run_playbook(tmp_path_factory.mktemp(name), "deploy.yml", {}, check=True,
                            hosts={"node-a": host_vars, "node-b": host_vars})
    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(CASES, pool.map(one, CASES), strict=True))


@pytest.mark.parametrize("name", list(CASES))
def test_a_wrong_multinode_setting_stops_before_the_deploy_play_naming_the_fix(runs, name):
    run, words = runs[name], CASES[name][1]
    assert run.rc != 0, run.explain()
    assert any(words in f.text() for f in run.failures), run.explain()
    for host in ("node-a", "node-b"):
        assert not [t for play, t in tasks_on(run, host) if play == DEPLOY_PLAY], run.explain()
