"""qmon: a real-time queue monitor and event generator (IBM MQ / IMS CQS rules on Kafka + Spark)."""

__version__ = "0.4.0"
