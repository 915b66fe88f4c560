"""The Spark Structured Streaming side of qmon: thin adapters around the pure rules in ``qmon``."""
