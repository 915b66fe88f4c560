"""The pure core: the rules (MQ service interval and depth events, IMS CQS structure overflow, interest,
journals, DLQ rules, MQSC), the record types and the configuration model.  Imports nothing from Spark, Kafka
clients, ``qmon.streaming``, ``qmon.connectors`` or the command line; time is passed in."""
