/* cudarl export: writes a checkpoint's policy as an ONNX model (tools/export.c). */
#ifndef CUDARL_TOOLS_EXPORT_H
#define CUDARL_TOOLS_EXPORT_H

/* Runs `cudarl export` on its arguments (argv[0] is the first after "export"); an exit code. */
int cudarl_cmd_export(int argc, char **argv);

#endif
