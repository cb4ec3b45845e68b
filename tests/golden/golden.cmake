# Against PyTorch (label cpu): each test reads a file from $CUDARL_TEST_DATA (this folder) that
# the generator beside it wrote (golden_<name>.py -> <name>_golden.*; README.md says what each
# file holds and how to regenerate it). loss_scale_golden.json is read by test_loss_scale's
# group golden (tests/unit/loss_scale.cmake).
# One CleanRL PPO update of the CartPole MLP agent (golden_ppo.py).
cudarl_test(test_ppo_golden SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_ppo_golden.c LABELS cpu)
# One DQN update (four variants) and a Polyak update (golden_dqn.py).
cudarl_test(test_dqn_golden SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_dqn_golden.c LABELS cpu)
# A whole Nature-CNN / MinAtar network through the CPU conv ops (golden_conv.py).
cudarl_test(test_conv_golden SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_conv_golden.c LABELS cpu)
# Whole CleanRL convolutional policies (golden_convnet.py); reads the file's metadata with cJSON.
cudarl_test(test_convnet_golden SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_convnet_golden.c
            LABELS cpu)
target_include_directories(test_convnet_golden PRIVATE ${CJSON_INCLUDE_DIR})
# One minatar-cnn PPO update through the trainer (golden_ppo_conv.py).
cudarl_test(test_ppo_conv_golden SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_ppo_conv_golden.c
            LABELS cpu)
# The PPO loss of CleanRL's ppo_continuous_action.py (Gaussian policy) with its gradients, and
# Box-Muller sampling (golden_ppo_gaussian.py).
cudarl_test(test_ppo_gaussian_golden SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_ppo_gaussian_golden.c
            LABELS cpu)
