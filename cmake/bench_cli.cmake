# `cudarl bench infer` (tools/bench_infer.c): the policy runtime's latency table on the seed's
# pixel network, built in memory; bench/peers/infer_peers.py is its peer.
target_sources(cudarl_cli PRIVATE ${PROJECT_SOURCE_DIR}/tools/bench_infer.c)
