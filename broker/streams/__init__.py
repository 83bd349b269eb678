"""Stream queues (``x-queue-type=stream``): an append-only log on disk read by many
consumers at their own offsets. See README.md in this folder."""
