"""gpu_telemetry's sampler files: a directory only its user writes, and only its own sampler killed."""
import os
import subprocess
import sys
import time

import gpu_telemetry
from ansible.module_utils.lease import renew as lease_renew


def test_world_writable_directory_is_refused(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    problem = gpu_telemetry.check_dir(str(shared / "gpu.csv"))
    assert problem and "writable by users other than" in problem and "sglang_benchmark_telemetry_path" in problem
    assert gpu_telemetry.check_dir("/tmp/sglang-gpu-telemetry.csv") is not None  # the old default


def test_missing_directory_is_created_private(tmp_path):
    path = tmp_path / "run" / "sglang-playbooks" / "gpu.csv"
    assert gpu_telemetry.check_dir(str(path)) is None
    assert (path.parent.stat().st_mode & 0o777) == 0o700


def _spawn(argv):
    return subprocess.Popen(argv, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def test_stop_kills_only_its_own_sampler(tmp_path):
    path = str(tmp_path / "gpu.csv")
    # A process id in the pid file that is not the sampler (stale, or planted): left alone.
    other = _spawn([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (tmp_path / "gpu.csv.pid").write_text(str(other.pid))
        assert gpu_telemetry.is_sampler(other.pid, path) is False
        assert gpu_telemetry._stop(path) is False
        time.sleep(0.1)
        assert other.poll() is None, "a process that is not the sampler was killed"
    finally:
        other.kill()
        other.wait()
    # The sampler itself (as the module starts it): stopped.
    lease_renew(path + ".lease")
    sampler = _spawn([sys.executable, "-c", gpu_telemetry.SAMPLER, path, path + ".lease", "60", sys.executable, "-c",
                      "import time; time.sleep(60)"])
    try:
        (tmp_path / "gpu.csv.pid").write_text(str(sampler.pid))
        deadline = time.monotonic() + 10
        while not gpu_telemetry.is_sampler(sampler.pid, path) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert gpu_telemetry.is_sampler(sampler.pid, path)
        assert gpu_telemetry.is_sampler(sampler.pid, path + ".other") is False
        assert gpu_telemetry._stop(path) is True
        assert sampler.wait(timeout=10) is not None
        assert not os.path.exists(path + ".pid")
    finally:
        if sampler.poll() is None:
            sampler.kill()


def test_the_sampler_samples_while_its_lease_is_renewed_and_stops_itself_when_it_lapses(tmp_path):
    """The controller gone (no renewal): the sampler and its nvidia-smi loop stop within the
    lease's seconds (+1 s, its read timeout); while renewed, it keeps sampling. (A 3 s lease
    renewed every 0.5 s: with 2 s, a make test run on 2 cores once saw it lapse between renewals.)"""
    path, lease = str(tmp_path / "gpu.csv"), str(tmp_path / "gpu.csv.lease")
    loop = "import time\nwhile True:\n    print('0, 100.5, 50, 1000, 1800', flush=True)\n    time.sleep(0.2)\n"
    lease_renew(lease)
    sampler = _spawn([sys.executable, "-c", gpu_telemetry.SAMPLER, path, lease, "3", sys.executable, "-c", loop])
    try:
        for _ in range(6):  # 3 s of renewals, each well inside the 3 s lease
            time.sleep(0.5)
            lease_renew(lease)
        assert sampler.poll() is None, "the sampler stopped while its lease was renewed"
        renewed_last = time.monotonic()
        sampler.wait(timeout=10)
        took = time.monotonic() - renewed_last
        assert 2.5 < took < 4.5, f"the sampler stopped {took:.1f} s after the last renewal of a 3 s lease"
        lines = open(path).read().splitlines()
        assert len(lines) >= 10 and all(line.split("|")[1] == "0, 100.5, 50, 1000, 1800" for line in lines), lines[:3]
        children = subprocess.run(["pgrep", "-f", "print\\('0, 100.5"], capture_output=True, text=True).stdout.split()
        assert children == [], "the sampler's nvidia-smi loop outlived it"
        assert os.path.exists(path + ".lapsed"), "the sampler left no word that its samples end early"
    finally:
        if sampler.poll() is None:
            sampler.kill()


def test_each_window_comes_back_with_its_energy():
    # (two GPUs at 100 W and 300 W, sampled every 0.5 s: 2 s of window hold 800 J)
    text = "".join(f"{10 + i / 2:.3f}|{gpu}, {watts}, 50, 1000, 1980\n"
                   for i in range(9) for gpu, watts in ((0, 100), (1, 300)))
    (inside, outside) = gpu_telemetry.windows_of(text, [{"max_concurrency": 8, "start": 10.5, "end": 12.5},
                                                        {"max_concurrency": 16, "start": 30.0, "end": 31.0}])
    assert inside["energy"]["joules"] == 800.0 and inside["energy"]["gpus"] == 2 and inside["max_concurrency"] == 8
    assert outside["energy"]["joules"] is None and "no power sample within the window" in outside["energy"]["note"]
