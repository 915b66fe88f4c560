"""The Kafka client settings qmon derives from ``kafka.security``: the same broker reached the same way by
qmon's own clients (librdkafka) and by Spark's Kafka source and sink (the Java client)."""

from __future__ import annotations

from qmon.connectors.kafka import client_config, spark_options
from qmon.core.config import KafkaSecurity


def test_a_pem_ca_file_is_given_to_both_clients_as_pem():
    security = KafkaSecurity(protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-512", username="qmon",
                             password="s3cret", ssl_cafile="/etc/qmon/ca.pem")  # fmt: skip
    spark = spark_options("broker:9093", security)
    assert spark["kafka.ssl.truststore.location"] == "/etc/qmon/ca.pem"
    assert spark["kafka.ssl.truststore.type"] == "PEM"
    assert "ScramLoginModule required" in spark["kafka.sasl.jaas.config"]
    assert client_config("broker:9093", security)["ssl.ca.location"] == "/etc/qmon/ca.pem"
