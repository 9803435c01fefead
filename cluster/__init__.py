"""The system under test: a Raft-replicated metadata service shaped like Kafka's KRaft controller.

Everything the node runs is standard-library Python, so it starts anywhere after an upload.
"""
