"""Beyond one device and one process: one model across replicas of one process
(tf.distribute's MirroredStrategy, or Keras' DataParallel on JAX) and across worker processes
(tf.distribute), and one intra-op thread against all (kinds/__init__.py says which file is
which; jobs.py starts the job processes, job_main.py and jax_job_main.py are their child half)."""
