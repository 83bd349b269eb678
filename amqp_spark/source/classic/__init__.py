"""Reading classic and quorum queues: the driver-side consumers and their window, the
micro-batch reader that acks at Spark's commit, the checkpoint lookup of once runs and the
quorum queues' delivery limit."""
