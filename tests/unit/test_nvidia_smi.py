"""module_utils.nvidia_smi on the recorded H200 outputs and the multi-GPU fixtures."""
from pathlib import Path

import pytest
from ansible.module_utils.nvidia_smi import (
    MIN_DRIVER,
    QUERY_FIELDS,
    architecture,
    build_gpu_facts,
    cuda_lanes,
    min_driver_table,
    parse_driver_proc_version,
    parse_p2p_matrix,
    parse_query_csv,
    parse_smi_banner,
    parse_telemetry_csv,
    parse_topo_matrix,
    query_argv,
    telemetry_argv,
    version_tuple,
)

SMI = Path(__file__).resolve().parents[1] / "fixtures" / "nvidia-smi"


def read(machine, name):
    return (SMI / machine / name).read_text()


def facts_for(machine):
    return build_gpu_facts(*(read(machine, name) for name in (
        "query.csv", "smi.txt", "topo_m.txt", "topo_p2p_r.txt", "driver_version.txt")))


def test_query_fields_are_the_recorded_header_and_the_argv_asks_for_them():
    header = read("h200-1gpu", "query.csv").splitlines()[0]
    assert [cell.split(" [")[0] for cell in header.split(", ")] == list(QUERY_FIELDS)
    argv = query_argv("/usr/bin/nvidia-smi")
    assert argv == ["/usr/bin/nvidia-smi", "--query-gpu=" + ",".join(QUERY_FIELDS), "--format=csv"]


def test_telemetry_argv_uses_seconds_or_milliseconds():
    assert telemetry_argv()[-2:] == ["-l", "1"]
    assert telemetry_argv(interval_ms=500)[-2:] == ["-lms", "500"]
    assert "--format=csv,noheader,nounits" in telemetry_argv()


def test_h200_query_csv_values_and_units():
    (gpu,) = parse_query_csv(read("h200-1gpu", "query.csv"))
    expected = {
        "index": 0, "name": "NVIDIA H200", "pci_bus_id": "00000000:00:06.0", "driver_version": "580.159.04",
        "memory_total_mib": 143771, "memory_used_mib": 0, "power_draw_w": pytest.approx(121.55),
        "power_limit_w": 700.0, "power_max_limit_w": 700.0, "utilization_gpu_pct": 0, "clocks_sm_mhz": 480,
        "clocks_max_sm_mhz": 1980, "pcie_link_gen": 5, "compute_cap": "9.0",
    }
    assert {key: gpu[key] for key in expected} == expected
    assert gpu["persistence_mode"] is True and gpu["mig_mode"] is False


def test_query_csv_nounits_and_noheader_give_the_same_devices():
    with_units = parse_query_csv(read("rtxpro6000-8gpu-vm", "query.csv"))
    lines = read("rtxpro6000-8gpu-vm", "query.csv").splitlines()
    nounits = "\n".join(
        [lines[0].replace(" [MiB]", "").replace(" [W]", "").replace(" [%]", "").replace(" [MHz]", "")]
        + [line.replace(" MiB", "").replace(" W,", ",").replace(" %", "").replace(" MHz", "")
           for line in lines[1:]])
    assert parse_query_csv(nounits) == with_units
    noheader = "\n".join(lines[1:])
    assert parse_query_csv(noheader, fields=QUERY_FIELDS) == with_units
    with pytest.raises(ValueError, match="no header"):
        parse_query_csv(noheader)


def test_query_csv_not_available_values_become_none():
    text = ("index, name, power.draw [W], mig.mode.current, temperature.memory\n"
            "0, NVIDIA RTX A6000, [N/A], [N/A], N/A\n"
            "1, NVIDIA RTX A6000, [Not Supported], Enabled, 45\n")
    first, second = parse_query_csv(text)
    assert first == {"index": 0, "name": "NVIDIA RTX A6000", "power_draw_w": None, "mig_mode": None,
                     "temperature_memory_c": None}
    assert second["power_draw_w"] is None and second["mig_mode"] is True
    assert second["temperature_memory_c"] == 45


def test_query_csv_other_field_lists_and_a_short_row():
    devices = parse_query_csv("name, memory.total [MiB], clocks.sm [MHz]\nNVIDIA H200, 143771 MiB, 345 MHz\n")
    assert devices == [{"name": "NVIDIA H200", "memory_total_mib": 143771, "clocks_sm_mhz": 345}]
    with pytest.raises(ValueError, match="2 values for 3 fields"):
        parse_query_csv("index, name, memory.total [MiB]\n0, NVIDIA H200\n")
    assert parse_query_csv("") == []


@pytest.mark.parametrize("machine, driver, cuda", [
    ("h200-1gpu", "580.159.04", "13.0"),
    ("rtxpro6000-8gpu-vm", "570.172.08", "12.8"),
    ("rtxa6000-2gpu-r535", "535.183.01", "12.2"),
    ("rtx5090-2gpu", "575.57.08", "12.9"),
])
def test_banner(machine, driver, cuda):
    banner = parse_smi_banner(read(machine, "smi.txt"))
    assert banner == {"smi_version": driver, "driver_version": driver, "cuda_version": cuda}


def test_topo_single_gpu_has_no_pairs_but_affinity():
    topo = parse_topo_matrix(read("h200-1gpu", "topo_m.txt"))
    assert topo["gpus"] == ["GPU0"]
    assert topo["links"] == {}
    assert topo["affinity"] == {"GPU0": {"cpu_affinity": "0-15", "numa_affinity": 0, "gpu_numa_id": None}}


def test_topo_vm_all_pairs_phb():
    topo = parse_topo_matrix(read("rtxpro6000-8gpu-vm", "topo_m.txt"))
    assert len(topo["links"]) == 28
    assert set(topo["links"].values()) == {"PHB"}
    assert "GPU0-GPU7" in topo["links"] and "GPU7-GPU0" not in topo["links"]
    assert topo["nics"] == [] and topo["nic_links"] == {}


def test_topo_dgx_nvlink_nics_and_numa():
    topo = parse_topo_matrix(read("h100-8gpu-nvlink", "topo_m.txt"))
    assert set(topo["links"].values()) == {"NV18"} and len(topo["links"]) == 28
    assert topo["nics"] == [f"NIC{k}" for k in range(10)]
    assert len(topo["nic_links"]) == 80
    assert topo["nic_links"]["GPU0-NIC0"] == "PIX"
    assert topo["nic_links"]["GPU0-NIC6"] == "SYS"
    assert topo["nic_names"]["NIC9"] == "mlx5_9"
    assert topo["affinity"]["GPU3"]["cpu_affinity"] == "0-55,112-167"
    assert topo["affinity"]["GPU4"] == {"cpu_affinity": "56-111,168-223", "numa_affinity": 1,
                                        "gpu_numa_id": None}


def test_topo_tolerates_spaces_instead_of_tabs():
    text = read("h100-8gpu-nvlink", "topo_m.txt")
    assert parse_topo_matrix(text.expandtabs(8)) == parse_topo_matrix(text)
    p2p = read("rtxpro6000-8gpu-vm", "topo_p2p_r.txt")
    assert parse_p2p_matrix(p2p.expandtabs(8)) == parse_p2p_matrix(p2p)


def test_p2p_matrices():
    assert parse_p2p_matrix(read("h200-1gpu", "topo_p2p_r.txt")) == {}
    vm = parse_p2p_matrix(read("rtxpro6000-8gpu-vm", "topo_p2p_r.txt"))
    assert len(vm) == 28 and set(vm.values()) == {"NS"}
    assert set(parse_p2p_matrix(read("h100-8gpu-nvlink", "topo_p2p_r.txt")).values()) == {"OK"}
    assert parse_p2p_matrix(read("rtx5090-2gpu", "topo_p2p_r.txt")) == {"GPU0-GPU1": "GNS"}


def test_driver_proc_version_open_and_proprietary():
    open_module = parse_driver_proc_version(read("h200-1gpu", "driver_version.txt"))
    assert open_module["driver_version"] == "580.159.04"
    assert open_module["open_kernel_module"] is True
    assert open_module["gcc_version"] == "gcc version 15.3.0 (GCC)"
    proprietary = parse_driver_proc_version(read("rtxa6000-2gpu-r535", "driver_version.txt"))
    assert proprietary["driver_version"] == "535.183.01"
    assert proprietary["open_kernel_module"] is False
    assert parse_driver_proc_version("") == {"driver_version": None, "open_kernel_module": None,
                                             "gcc_version": None}


def test_facts_reference_vm():
    facts = facts_for("rtxpro6000-8gpu-vm")
    assert facts["count"] == 8
    assert facts["driver_version"] == "570.172.08"
    assert facts["cuda_version"] == "12.8"
    assert facts["names"] == ["NVIDIA RTX PRO 6000 Blackwell Server Edition"] * 8
    assert facts["memory_total_mib"] == 97887
    assert facts["power_limit_w"] == 600.0
    assert [d["index"] for d in facts["devices"]] == list(range(8))
    assert {d["architecture"] for d in facts["devices"]} == {"Blackwell"}
    assert facts["is_blackwell"] is True
    assert facts["nvlink"] is False
    assert facts["p2p_available"] is False
    assert facts["open_kernel_module"] is True
    assert facts["links"]["GPU3-GPU5"] == "PHB"


def test_facts_dgx_h100():
    facts = facts_for("h100-8gpu-nvlink")
    assert (facts["count"], facts["driver_version"], facts["cuda_version"]) == (8, "550.90.07", "12.4")
    assert facts["nvlink"] is True
    assert facts["p2p_available"] is True
    assert facts["open_kernel_module"] is False
    assert facts["architectures"] == ["Hopper"] and facts["is_blackwell"] is False
    assert facts["nic_names"]["NIC0"] == "mlx5_0"


def test_facts_two_gpu_hosts():
    old = facts_for("rtxa6000-2gpu-r535")
    assert old["count"] == 2 and old["p2p_available"] is True and old["links"] == {"GPU0-GPU1": "SYS"}
    assert old["architectures"] == ["Ampere"]
    assert old["devices"][0]["mig_mode"] is None
    geforce = facts_for("rtx5090-2gpu")
    assert geforce["count"] == 2 and geforce["is_blackwell"] is True
    assert geforce["p2p_available"] is False
    assert geforce["memory_total_mib"] == 32607


def test_facts_single_gpu_p2p_is_undecided():
    facts = facts_for("h200-1gpu")
    assert facts["count"] == 1
    assert facts["p2p_available"] is None
    assert facts["nvlink"] is False
    assert facts["architectures"] == ["Hopper"]


def test_facts_without_optional_outputs():
    facts = build_gpu_facts(read("rtxpro6000-8gpu-vm", "query.csv"))
    assert facts["count"] == 8 and facts["driver_version"] == "570.172.08"
    assert facts["cuda_version"] is None
    assert facts["links"] == {} and facts["p2p_available"] is None
    assert facts["open_kernel_module"] is None


def test_p2p_with_one_bad_pair_is_unavailable():
    row = " GPU0\tX" + "\tOK" * 7 + "\t"
    text = read("h100-8gpu-nvlink", "topo_p2p_r.txt")
    assert row in text
    text = text.replace(row, " GPU0\tX" + "\tOK" * 6 + "\tCNS\t")
    facts = build_gpu_facts(read("h100-8gpu-nvlink", "query.csv"), p2p_text=text)
    assert facts["p2p_read"]["GPU0-GPU7"] == "CNS"
    assert list(facts["p2p_read"].values()).count("CNS") == 1
    assert facts["p2p_available"] is False


@pytest.mark.parametrize("cap, name", [
    ("9.0", "Hopper"), ("10.0", "Blackwell"), ("12.0", "Blackwell"), ("8.0", "Ampere"),
    ("8.6", "Ampere"), ("8.9", "Ada"), ("7.5", "Turing"), (None, None), ("x", None)])
def test_architecture(cap, name):
    assert architecture(cap) == name


def test_min_driver_table_is_nvidias_ga_rows():
    # NVIDIA's release notes, "CUDA Toolkit and Corresponding Driver Versions", Linux x86_64 GA
    assert MIN_DRIVER["12.8"] == "570.26"
    assert MIN_DRIVER["12.9"] == "575.51.03"
    assert MIN_DRIVER["13.0"] == "580.65.06"
    assert MIN_DRIVER["13.1"] == "590.44.01"
    assert MIN_DRIVER["13.2"] == "595.45.04"
    # a newer release never needs an older driver
    lanes = sorted(MIN_DRIVER, key=version_tuple)
    drivers = [version_tuple(MIN_DRIVER[lane]) for lane in lanes]
    assert drivers == sorted(drivers)


def test_version_tuple_compares_numerically():
    assert version_tuple("570.172.08") > version_tuple("570.26")
    assert version_tuple("580") == version_tuple("580.0.0") < version_tuple("580.65.06")
    assert version_tuple("575.51.03") > version_tuple("575.51")


@pytest.mark.parametrize("machine, supported, unsupported", [
    ("rtxpro6000-8gpu-vm", ["12.8"], ["12.9", "13.0"]),   # 570.172.08
    ("rtxa6000-2gpu-r535", ["12.2"], ["12.3", "12.8"]),   # 535.183.01
    ("rtx5090-2gpu", ["12.9"], ["13.0"]),                 # 575.57.08
    ("h200-1gpu", ["13.0"], ["13.1"]),                    # 580.159.04
])
def test_cuda_lanes_of_the_recorded_drivers(machine, supported, unsupported):
    driver = parse_query_csv(read(machine, "query.csv"))[0]["driver_version"]
    lanes = cuda_lanes(driver)
    assert set(lanes) == set(MIN_DRIVER)
    assert all(lanes[lane]["supported"] is True for lane in supported)
    assert all(lanes[lane]["supported"] is False for lane in unsupported)
    assert lanes["12.8"]["min_driver"] == "570.26"


def test_cuda_lanes_at_the_exact_minimum_and_unknown_driver():
    assert cuda_lanes("570.26")["12.8"]["supported"] is True
    assert cuda_lanes("570.25.99")["12.8"]["supported"] is False
    assert cuda_lanes(None)["12.8"] == {"min_driver": "570.26", "supported": None}
    assert cuda_lanes("garbage")["13.0"]["supported"] is None


def test_extra_rows_add_and_replace():
    lanes = cuda_lanes("600.10", {"13.3": "610.43.02", 12.8: "570.124.06"})
    assert lanes["13.3"] == {"min_driver": "610.43.02", "supported": False}
    assert lanes["12.8"]["min_driver"] == "570.124.06"
    assert list(lanes)[-1] == "13.3"


@pytest.mark.parametrize("extra", [{"13": "610"}, {"13.3": "latest"}, {"cu133": "610.43.02"}])
def test_extra_rows_bad_input_names_the_row(extra):
    with pytest.raises(ValueError, match="is not a CUDA release and a driver version"):
        min_driver_table(extra)


def test_telemetry_single_gpu_loop():
    (gpu,) = parse_telemetry_csv(read("h200-1gpu", "loop.csv"))
    assert gpu["index"] == 0 and gpu["samples"] == 6
    assert gpu["power_draw_w"] == {"mean": pytest.approx(90.71, abs=0.01), "max": 119.51}
    assert gpu["clocks_sm_mhz"]["max"] == 435


def test_telemetry_eight_gpus_and_bad_lines():
    text = read("rtxpro6000-8gpu-vm", "loop.csv") + "3, 240.0"   # killed mid-line
    gpus = parse_telemetry_csv(text)
    assert [g["index"] for g in gpus] == list(range(8))
    assert all(g["samples"] == 3 for g in gpus)
    assert gpus[0]["power_draw_w"]["max"] == pytest.approx(236.4)
    assert gpus[0]["utilization_gpu_pct"] == {"mean": pytest.approx(99.67, abs=0.01), "max": 100}


def test_telemetry_skips_na_cells_and_headers():
    gpus = parse_telemetry_csv(
        "index, power.draw [W], utilization.gpu [%], memory.used [MiB], clocks.sm [MHz]\n"
        + read("rtxa6000-2gpu-r535", "loop.csv"))
    assert gpus[1]["samples"] == 2
    assert gpus[1]["power_draw_w"] == {"mean": pytest.approx(22.9), "max": pytest.approx(22.9)}
    assert gpus[0]["power_draw_w"]["max"] == pytest.approx(22.1)
