"""Differential protocol tests: the same requests to Apache Kafka and to pykraft, the
responses compared field by field after ``tests.kafka.normalise_fields`` (issue 20, item 3)."""
