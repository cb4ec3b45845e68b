# `cudarl eval --video` end to end (test_video.py on the built binary and tests/unit's
# render_dump, label cli): GIFs decoded with Pillow, MP4 through an ffmpeg stand-in, refusals.
if(Python3_EXECUTABLE)
  set(CUDARL_VIDEO_PYTHON ${Python3_EXECUTABLE})
else()
  set(CUDARL_VIDEO_PYTHON python3) # never skip silently: fails saying so if there is none
endif()
# Built without giflib (CMakeLists.txt finds it), a .gif must be refused naming the package.
if(GIF_FOUND)
  set(CUDARL_VIDEO_GROUPS gif mp4 bad_input)
else()
  set(CUDARL_VIDEO_GROUPS no_gif mp4)
endif()
foreach(group ${CUDARL_VIDEO_GROUPS})
  add_test(NAME video_${group}
           COMMAND ${CUDARL_VIDEO_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/test_video.py
                   --cudarl ${CUDARL_CLI_RUN} --dump ${CUDARL_RENDER_DUMP_RUN}
                   --work ${CMAKE_CURRENT_BINARY_DIR}/video-work --only ${group})
  set_tests_properties(video_${group} PROPERTIES LABELS "cpu;cli" TIMEOUT 300)
endforeach()
# The gif group trains three policies (2.5 s in a release build, 130 s under the sanitizers):
# a learning run, left out of the sanitizer pass; test_video and the other groups cover the
# writer there.
if(GIF_FOUND)
  set_tests_properties(video_gif PROPERTIES LABELS "cpu;cli;slow")
endif()
# On a GPU (label gpu): conv policies' videos through the CUDA policy runtime.
if(GIF_FOUND AND CUDARL_HAVE_CUDA)
  add_test(NAME video_gpu
           COMMAND ${CUDARL_VIDEO_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/test_video.py
                   --cudarl ${CUDARL_CLI_RUN} --dump ${CUDARL_RENDER_DUMP_RUN}
                   --work ${CMAKE_CURRENT_BINARY_DIR}/video-work --only gpu)
  set_tests_properties(video_gpu PROPERTIES LABELS gpu TIMEOUT 300)
endif()
