# The host communicator of a job of threads (--num-gpus N: cr_comm_run_threads, ops/comm.c), on
# the CPU: ranks, allgather (in place too), gather0, bcast0 and the rank-order gradient mean, over
# many rounds, against what one thread computes.
cudarl_test(test_comm_threads SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_comm_threads.c LABELS cpu)
# PPO data parallel over that communicator on CPU contexts (the trainer's side of --num-gpus N,
# which CI can run): the first rollout is one process's, jobs repeat bit for bit.
cudarl_test(test_dist_threads SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_dist_threads.c LABELS cpu
            ARGS ${CMAKE_CURRENT_BINARY_DIR}/dist-threads-runs)
