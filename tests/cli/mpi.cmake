# Data-parallel PPO and DQN over MPI on the CPU (tests/cli/test_mpi.py, docs/multigpu.md): mpirun -np 1
# equals a plain run; 2 ranks share 8 envs as one process would (the first rollout the same,
# identical weights on the ranks, CartPole learned); resume on 2 ranks bit for bit; refusals; a
# killed rank ends the job; the conv policy on the env pool (MinAtar, conv_*) likewise, and DQN's
# (dqn_*: the MLP; dqn_conv_*: the conv Q-networks on the env pool). One ctest entry per group,
# each in its own folder. Release: 1-8 s each on 2 cores; the ASan+UBSan Debug pass
# (scripts/test.sh): 6-290 s (dqn_learn the longest), hence the timeout.
if(NOT CUDARL_HAVE_MPI OR NOT MPIEXEC_EXECUTABLE)
  message(STATUS "cudarl: no MPI in this build (CUDARL_MPI=OFF, or MPI or mpirun not found): the "
                 "data-parallel tests (label mpi) are not registered, but for the refusal of a "
                 "2-rank launch; install libopenmpi-dev and openmpi-bin (scripts/setup.sh "
                 "does) and reconfigure")
  if(NOT CUDARL_HAVE_MPI)
    # a build without MPI refuses a launch of 2 ranks (the launcher's variable, no mpirun needed)
    add_test(NAME mpi_refused_without_mpi
             COMMAND ${CMAKE_COMMAND} -E env OMPI_COMM_WORLD_SIZE=2 ${CUDARL_CLI_RUN} train
                     --device cpu --quiet --total-timesteps 1024
                     --runs-dir ${CMAKE_CURRENT_BINARY_DIR}/mpi-work/refused)
    set_tests_properties(mpi_refused_without_mpi PROPERTIES LABELS "cpu;mpi" TIMEOUT 60
                         PASS_REGULAR_EXPRESSION "built without MPI.*-DCUDARL_MPI=ON")
    add_test(NAME mpi_info_without_mpi COMMAND ${CUDARL_CLI_RUN} info)
    set_tests_properties(mpi_info_without_mpi PROPERTIES LABELS "cpu;mpi" TIMEOUT 60
                         PASS_REGULAR_EXPRESSION "data parallel: not built")
  endif()
  return()
endif()
if(Python3_EXECUTABLE)
  set(CUDARL_MPI_PYTHON ${Python3_EXECUTABLE})
else()
  set(CUDARL_MPI_PYTHON python3) # never skip silently: fails saying so if there is none
endif()
foreach(group np1 np2 learn resume bad kill conv_np1 conv_np2 conv_resume dqn_np1 dqn_np2 dqn_learn
              dqn_resume dqn_bad dqn_conv_np1 dqn_conv_np2 dqn_conv_resume)
  add_test(NAME mpi_${group}
           COMMAND ${CUDARL_MPI_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/test_mpi.py
                   --cudarl ${CUDARL_CLI_RUN} --mpirun ${MPIEXEC_EXECUTABLE}
                   --work ${CMAKE_CURRENT_BINARY_DIR}/mpi-work --only ${group})
  set_tests_properties(mpi_${group} PROPERTIES LABELS "cpu;mpi" TIMEOUT 900)
endforeach()
# DQN on 2 ranks refuses a vector env (one registered through the API: tests/cli/mpi_dqn_vec.c)
add_executable(mpi_dqn_vec ${CMAKE_CURRENT_LIST_DIR}/mpi_dqn_vec.c)
cudarl_test_target(mpi_dqn_vec)
cudarl_test_runner(CUDARL_MPI_DQN_VEC_RUN mpi_dqn_vec)
execute_process(COMMAND ${MPIEXEC_EXECUTABLE} --version OUTPUT_VARIABLE CUDARL_MPI_VERSION
                ERROR_QUIET)
set(CUDARL_MPI_FLAGS "")
if(CUDARL_MPI_VERSION MATCHES "Open MPI|OpenRTE")
  set(CUDARL_MPI_FLAGS --oversubscribe)
endif()
add_test(NAME mpi_dqn_vec_refused
         COMMAND ${CMAKE_COMMAND} -E env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
                 ASAN_OPTIONS=detect_leaks=0
                 ${MPIEXEC_EXECUTABLE} ${CUDARL_MPI_FLAGS} -np 2 ${CUDARL_MPI_DQN_VEC_RUN}
                 ${CMAKE_CURRENT_BINARY_DIR}/mpi-work/dqn_vec)
set_tests_properties(mpi_dqn_vec_refused PROPERTIES LABELS "cpu;mpi" TIMEOUT 120)
# cudarl info says the build has MPI
add_test(NAME mpi_info COMMAND ${CUDARL_CLI_RUN} info)
set_tests_properties(mpi_info PROPERTIES LABELS "cpu;mpi" TIMEOUT 60
                     PASS_REGULAR_EXPRESSION "data parallel: MPI \\(mpirun -np R")
