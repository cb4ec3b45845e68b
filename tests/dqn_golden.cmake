# One DQN update (four variants) and a Polyak update against PyTorch: tests/data/dqn_golden.safetensors,
# written by scripts/golden_dqn.py (label cpu; reads $CUDARL_TEST_DATA).
cudarl_test(test_dqn_golden SOURCES test_dqn_golden.c LABELS cpu)
