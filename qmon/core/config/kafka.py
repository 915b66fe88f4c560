"""``kafka:``: the Kafka cluster, qmon's topics, the clients' security and the schema registry."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, SecretStr, field_validator, model_validator

from qmon.core.config.base import Frozen


class KafkaSecurity(Frozen):
    """Client security settings, passed to every Kafka client qmon makes."""

    protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = Field(
        "PLAINTEXT", description="Kafka's security.protocol for every client qmon makes (the job's too)"
    )
    sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] | None = Field(
        None, description="SASL mechanism, with a SASL protocol"
    )
    username: str | None = Field(None, description="SASL user name")
    password: SecretStr | None = Field(None, description="SASL password (never logged)")
    ssl_cafile: str | None = Field(None, description="PEM file of the CA that signed the brokers' certificates")

    @field_validator("protocol", mode="before")
    @classmethod
    def _upper(cls, v: Any) -> Any:
        return v.upper() if isinstance(v, str) else v


class KafkaConfig(Frozen):
    bootstrap: str = Field(
        "127.0.0.1:9092", description="Kafka bootstrap servers (--bootstrap and QMON_BOOTSTRAP take precedence)"
    )
    topic_prefix: str = Field(
        "qmon", pattern=r"^[A-Za-z0-9._-]{1,200}$", description="qmon.activity becomes <prefix>.activity, and so on"
    )
    partitions: int = Field(4, ge=1, le=1024, description="partitions of the topics qmon creates")
    security: KafkaSecurity = Field(KafkaSecurity(), description="client security settings")
    schema_registry_url: str | None = Field(
        None,
        description="base URL of a Confluent-compatible schema registry API (Apicurio Registry's: "
        "http://host:8080/apis/ccompat/v7): input records in Confluent's wire format are read with the schema "
        "their id names, and the job's outputs, qmon produce and qmon simulate write registered ids",
    )
    schema_registry_username: str | None = Field(
        None, description="user name for the schema registry's HTTP basic authentication"
    )
    schema_registry_password: SecretStr | None = Field(
        None, description="password for the schema registry's HTTP basic authentication (never logged)"
    )

    @field_validator("schema_registry_url")
    @classmethod
    def _registry_url(cls, v: str | None) -> str | None:
        if v is None:
            return v
        from urllib.parse import urlsplit

        try:
            parts = urlsplit(v.strip())
            parts.port  # noqa: B018 - raises ValueError for a port that is not a number
        except ValueError as exc:
            raise ValueError(f"{v!r} is not a URL: {exc}") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"{v!r} is not an http:// or https:// URL with a host (e.g. http://registry:8081)")
        if parts.username is not None or parts.password is not None:
            raise ValueError(
                "the URL holds credentials: give them as kafka.schema_registry_username and "
                "kafka.schema_registry_password (the URL appears in logs and dead letters)"
            )
        if parts.query or parts.fragment:
            raise ValueError(f"{v!r} has a query or a fragment; give the base URL of the registry's API")
        return v.strip().rstrip("/")

    @model_validator(mode="after")
    def _registry_login(self) -> KafkaConfig:
        if (self.schema_registry_username is None) != (self.schema_registry_password is None):
            raise ValueError(
                "kafka.schema_registry_username and kafka.schema_registry_password go together (HTTP basic "
                "authentication): give both or neither"
            )
        if self.schema_registry_username is not None and self.schema_registry_url is None:
            raise ValueError("kafka.schema_registry_username is set but kafka.schema_registry_url is not")
        return self
