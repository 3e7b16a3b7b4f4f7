"""cuda_toolkit installed the pinned toolkit from the signed test repository and set up the host."""

import pytest

testinfra_hosts = ["podman://sglpb-cuda-host"]

HOME = "/usr/local/cuda-12.8"
SOURCES = "/etc/apt/sources.list.d/cuda-debian12-x86_64.sources"
KEYRING = "/etc/apt/keyrings/cuda-archive-keyring.gpg"


def test_toolkit_installed_at_the_pinned_version(host):
    pkg = host.package("cuda-toolkit-12-8")
    assert pkg.is_installed
    # the repository also offers 12.8.0-1 and a newer 12.8.90-1
    assert pkg.version == "12.8.1-1"


def test_nvcc_reports_release_12_8(host):
    out = host.check_output(f"{HOME}/bin/nvcc --version")
    assert "Cuda compilation tools, release 12.8, V12.8.93" in out


def test_login_shell_has_cuda_on_path(host):
    out = host.check_output("env -i HOME=/root bash -lc 'echo $CUDA_HOME; command -v nvcc; echo $PATH'")
    cuda_home, nvcc, path = out.splitlines()
    assert cuda_home == HOME
    assert nvcc == f"{HOME}/bin/nvcc"
    assert path.split(":").count(f"{HOME}/bin") == 1


def test_ldconfig_searches_the_toolkit_libraries(host):
    conf = host.file("/etc/ld.so.conf.d/cuda-12-8.conf")
    assert conf.mode == 0o644
    assert f"{HOME}/lib64" in conf.content_string.splitlines()
    assert f"{HOME}/lib64:" in host.check_output("ldconfig -v 2>/dev/null")


def test_source_is_deb822_signed_by_the_keyring(host):
    sources = host.file(SOURCES)
    assert sources.mode == 0o644
    fields = dict(
        line.split(": ", 1)
        for line in sources.content_string.splitlines()
        if line and not line.startswith("#")
    )
    assert fields["URIs"] == "http://sglpb-cuda-repo:8080/good/"
    assert fields["Suites"] == "/"
    assert fields["Signed-By"] == KEYRING
    assert not host.file("/etc/apt/sources.list.d/cuda-debian12-x86_64.list").exists


def test_keyring_is_a_dearmored_root_owned_file(host):
    keyring = host.file(KEYRING)
    assert keyring.user == "root" and keyring.group == "root"
    assert keyring.mode == 0o644
    # binary OpenPGP, not armour; and it holds the test key
    assert "BEGIN PGP" not in host.check_output(f"head -c 64 {KEYRING} | od -c")
    fpr = host.check_output("curl -fsS http://sglpb-cuda-repo:8080/keys/cuda-test.fpr").strip()
    assert fpr in host.check_output(f"gpg --show-keys --with-colons {KEYRING}")


@pytest.mark.parametrize(
    ("package", "selection"),
    [("nvidia-driver-570", "hold"), ("cuda-toolkit-12-8", "install"), ("cuda-nvcc-12-8", "install")],
)
def test_driver_packages_held_and_nothing_else(host, package, selection):
    out = host.check_output(f"dpkg --get-selections {package}")
    assert out.split() == [package, selection]


def test_apt_still_works_with_the_source(host):
    cmd = host.run("apt-get update -o Dir::Etc::SourceList=%s -o Dir::Etc::SourceParts=-", SOURCES)
    assert cmd.rc == 0, cmd.stderr
    assert "E:" not in cmd.stderr and "W:" not in cmd.stderr
