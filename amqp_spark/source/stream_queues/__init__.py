"""Reading stream queues and super streams: where a read starts, the tails and offset ranges,
range reads that resume and filtered reads that stop exactly, retention's data loss, and the
micro-batch readers of a stream queue and of a super stream."""
