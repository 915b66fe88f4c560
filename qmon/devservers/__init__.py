"""Development servers qmon starts on this machine for its demo, tests and benchmarks: an Apache Kafka broker
(KRaft), a schema registry, a Spark standalone cluster.  A job never imports them (an import-linter contract)."""
