"""The YARN cluster's pure parts: the configuration files a client is given, the cluster's settings, the launcher's
lines, and which processes count as containers left behind.  (Starting the cluster is the YARN end-to-end test's.)"""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from qmon.devservers.yarn import (
    LAUNCHER_SOURCE,
    YarnCluster,
    client_files,
    cluster_conf,
    leftovers,
    parse_line,
    site_xml,
    spark_submit_conf,
)


def properties(text: str) -> dict[str, str]:
    """A Hadoop configuration file read back as Hadoop reads it: name and value of each property."""
    root = ET.fromstring(text)
    assert root.tag == "configuration"
    return {p.findtext("name") or "": p.findtext("value") or "" for p in root.iter("property")}


def test_a_site_file_holds_each_property_in_order_and_escapes_what_xml_must():
    text = site_xml({"b.key": "1", "a.key": 'x<y & z>"w"'})
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>\n<configuration>')
    assert properties(text) == {"b.key": "1", "a.key": 'x<y & z>"w"'}
    assert list(properties(text)) == ["b.key", "a.key"]
    assert properties(site_xml({})) == {}


def test_the_client_files_name_the_resource_managers_addresses_and_the_local_file_system():
    addresses = {
        "yarn.resourcemanager.address": "localhost:40001",
        "yarn.resourcemanager.scheduler.address": "localhost:40002",
        "yarn.resourcemanager.webapp.address": "localhost:40003",
    }
    files = client_files(addresses)
    assert set(files) == {"yarn-site.xml", "core-site.xml"}
    yarn = properties(files["yarn-site.xml"])
    assert yarn == {"yarn.resourcemanager.hostname": "localhost", **addresses}
    assert properties(files["core-site.xml"]) == {"fs.defaultFS": "file:///"}
    # a reported hostname wins over the default one
    assert properties(client_files({"yarn.resourcemanager.hostname": "vm"})["yarn-site.xml"]) == {
        "yarn.resourcemanager.hostname": "vm"
    }


def test_the_cluster_sizes_each_node_manager_and_turns_off_what_a_test_machine_trips():
    conf = cluster_conf(6144, 3, Path("/w/tmp"))
    assert conf["yarn.minicluster.yarn.nodemanager.resource.memory-mb"] == "6144"
    assert conf["yarn.nodemanager.resource.cpu-vcores"] == "3"
    assert conf["yarn.scheduler.maximum-allocation-mb"] == "6144"
    assert conf["yarn.scheduler.minimum-allocation-mb"] == "256"
    assert conf["yarn.nodemanager.pmem-check-enabled"] == conf["yarn.nodemanager.vmem-check-enabled"] == "false"
    assert conf["yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage"] == "100.0"
    assert conf["yarn.scheduler.capacity.root.queues"] == "default"
    assert conf["hadoop.tmp.dir"] == "/w/tmp"
    assert all(isinstance(v, str) and "\n" not in v for v in conf.values())


def test_the_launchers_lines_are_told_from_anything_else_it_prints():
    assert parse_line("qmon-yarn conf yarn.resourcemanager.address localhost:40001") == (
        "conf",
        ["yarn.resourcemanager.address", "localhost:40001"],
    )
    assert parse_line("qmon-yarn node 1 localhost:41234 STARTED -") == (
        "node",
        ["1", "localhost:41234", "STARTED", "-"],
    )
    assert parse_line("qmon-yarn ready 4210") == ("ready", ["4210"])
    assert parse_line("qmon-yarn ") is None
    assert parse_line("SLF4J: Class path contains multiple SLF4J bindings.") is None


def test_the_launcher_speaks_the_protocol_the_module_reads():
    source = LAUNCHER_SOURCE.read_text()
    assert 'PREFIX = "qmon-yarn "' in source
    for word in ("conf ", "ready ", "node ", "app ", "end", "stopped-nm ", "killed-app ", "error ", "stopped"):
        assert f'say("{word}' in source, word
    for command in ("nodes", "apps", "stop-nm", "kill-app", "stop"):
        assert f'"{command}"' in source, command


def test_a_process_working_in_the_node_managers_directories_is_left_over_and_this_one_is_not(tmp_path: Path):
    root = tmp_path / "target" / "qmon-yarn"
    work = root / "qmon-yarn-localDir-nm-0_0" / "container_1"
    work.mkdir(parents=True)
    sleeper = "import time; print('up', flush=True); time.sleep(60)"
    child = subprocess.Popen([sys.executable, "-c", sleeper], cwd=work, stdout=subprocess.PIPE)
    named = subprocess.Popen([sys.executable, "-c", sleeper, str(root / "x")], stdout=subprocess.PIPE)
    elsewhere = subprocess.Popen([sys.executable, "-c", sleeper], cwd=tmp_path, stdout=subprocess.PIPE)
    try:
        for p in (child, named, elsewhere):  # (until a child has started its program, it shows this one's command)
            assert p.stdout is not None and p.stdout.readline() == b"up\n"
        found = leftovers(root)
        assert child.pid in found
        assert named.pid in found
        assert elsewhere.pid not in found
        assert os.getpid() not in found
    finally:
        for p in (child, named, elsewhere):
            p.kill()
            p.communicate()


def test_spark_submit_is_given_sparks_jars_in_place_and_a_local_staging_directory(tmp_path: Path):
    conf = spark_submit_conf(Path("/venv/pyspark"), tmp_path / "staging")
    assert conf["spark.yarn.jars"] == "local:/venv/pyspark/jars/*"
    assert conf["spark.yarn.stagingDir"] == (tmp_path / "staging").resolve().as_uri()
    assert conf["spark.yarn.stagingDir"].startswith("file:///")


def test_the_client_environment_names_the_clusters_configuration_directory(tmp_path: Path):
    cluster = YarnCluster(tmp_path)
    assert cluster.client_env() == {"HADOOP_CONF_DIR": str(tmp_path / "conf"), "YARN_CONF_DIR": str(tmp_path / "conf")}
    assert cluster.nm_root == tmp_path / "target"
    assert cluster.container_logs() == []
