"""After the role refused the unsigned and the wrongly signed repository, the host is as before."""

testinfra_hosts = ["podman://sglpb-cuda-neg"]


def test_nothing_installed_from_the_refused_repositories(host):
    assert not host.package("cuda-toolkit-12-8").is_installed
    assert not host.file("/usr/local/cuda-12.8").exists


def test_refused_source_removed(host):
    assert host.check_output("ls /etc/apt/sources.list.d/") == ""


def test_apt_update_not_broken(host):
    # with the refused source left behind, every apt-get update on the host would fail
    cmd = host.run("apt-get update -o Dir::Etc::SourceList=/dev/null")
    assert cmd.rc == 0, cmd.stderr
