"""PySpark over the Kafka protocol: the `brokerd` data source and the batch-load jobs.

`spark_jobs.source` is the data source (`spark.read.format("brokerd")`,
`df.write.format("brokerd")`); `load_topic` and `ingest` are jobs run with `spark-submit`.
"""
