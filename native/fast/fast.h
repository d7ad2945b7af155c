/*
 * fast.h -- what the files of the _fast extension share (_fast.c, gate.c).
 */
#ifndef SEER_FAST_H
#define SEER_FAST_H

#include <Python.h>

/* Add the Gate type (gate.c) to the _fast module; -1 with an exception set
 * on failure.  Called once, from PyInit__fast, under the GIL. */
int seer_fast_add_gate(PyObject *module);

#endif /* SEER_FAST_H */
