/* Argument parsing for the cudarl CLI (being written). */
