/* Network specs in their text form (nn/convnet.h's format) that several tests build policies of
 * in memory (cudarl_policy_load_network). */
#ifndef CUDARL_TEST_NETSPECS_H
#define CUDARL_TEST_NETSPECS_H

/* CleanRL ppo_atari.py's Agent: nature-cnn on 4x84x84 pixels / 255, 6 actions. */
#define NETSPEC_NATURE_PPO6                                                                      \
    "{\"format\":\"cudarl-convnet\",\"version\":1,\"name\":\"nature-cnn\","                    \
    "\"input\":{\"shape\":[4,84,84],\"dtype\":\"u8\",\"scale\":\"1/255\"},"                     \
    "\"layers\":[{\"type\":\"conv\",\"out\":32,\"kernel\":[8,8],\"stride\":4,\"pad\":0},"       \
    "{\"type\":\"relu\"},{\"type\":\"conv\",\"out\":64,\"kernel\":[4,4],\"stride\":2,\"pad\":0},"  \
    "{\"type\":\"relu\"},{\"type\":\"conv\",\"out\":64,\"kernel\":[3,3],\"stride\":1,\"pad\":0},"  \
    "{\"type\":\"relu\"},{\"type\":\"flatten\"},{\"type\":\"linear\",\"out\":512},"             \
    "{\"type\":\"relu\"}],\"heads\":{\"type\":\"ppo\",\"actions\":6}}"

#endif
