/*
 * gate.c -- seer_env._fast.Gate: one call at a time through an env, and none
 * once it is closing.  Part of the _fast extension (_fast.c adds the type to
 * the module at import, seer_fast_add_gate); CPython's C API only, no NumPy.
 * Every function here runs on a thread holding the GIL.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "fast.h"

/* ---- the gate: one call at a time per env -------------------------------------- */

/* An env's calls pass through its gate (Gate.call, which seer_env.env's
 * generated wrappers call): one at a time, and none once close() started.
 * Everything that must not be separated by a signal handler happens here, in
 * C, under the GIL: taking the gate and recording its owner, running the
 * call, giving the gate back.  (In Python a KeyboardInterrupt can come
 * between any two calls: between taking a lock and entering the `try` that
 * gives it back, for instance, leaving the env locked for good.)
 *
 * close() (Gate.close) marks the gate closing at once, so every later call
 * is refused with ClosedError, then waits for a call running on another
 * thread to end and closes the env.  Called on the thread that is inside a
 * call of the env -- from a signal handler or a callback, between two
 * bytecodes of that call -- it cannot wait for itself, nor free what the
 * call is still using: it marks the close pending, and the call, when it
 * ends, closes the env and ends with ClosedError (or with the exception it
 * was already raising, such as the handler's KeyboardInterrupt).
 *
 * The lock is held exactly while `owner` is set; `owner` is only written by
 * the thread holding it. */

#define GATE_ASIDE (~0UL) /* held by Gate.acquire(): as if another thread were inside */

typedef struct {
    PyObject_HEAD
    PyThread_type_lock lock;
    unsigned long owner;  /* the thread inside a call or a close, GATE_ASIDE, or 0 */
    char closing;         /* close() started: every call is refused */
    char pending;         /* close() came on the owner's thread: the call closes */
} GateObject;

/* Interned strings: the env's mark and the reasons a call is refused. */
static PyObject *str_interrupted, *why_busy, *why_reentrant, *why_closed, *why_interrupted,
    *why_closed_during;

static PyObject *gate_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    if (PyTuple_GET_SIZE(args) || (kwds && PyDict_GET_SIZE(kwds))) {
        PyErr_SetString(PyExc_TypeError, "Gate() takes no arguments");
        return NULL;
    }
    GateObject *g = (GateObject *)type->tp_alloc(type, 0);
    if (!g)
        return NULL;
    if (!(g->lock = PyThread_allocate_lock())) {
        Py_DECREF(g);
        return PyErr_NoMemory();
    }
    return (PyObject *)g;
}

static void gate_dealloc(GateObject *g)
{
    if (g->lock)
        PyThread_free_lock(g->lock);
    Py_TYPE(g)->tp_free((PyObject *)g);
}

/* Take the lock, waiting with the GIL released: in slices, so that signal
 * handlers run (on the main thread) while a long call on another thread is
 * waited for.  -1 with the handler's exception if one raised. */
static int gate_wait(GateObject *g)
{
    if (PyThread_acquire_lock(g->lock, NOWAIT_LOCK))
        return 0;
    for (;;) {
        PyLockStatus r;
        Py_BEGIN_ALLOW_THREADS
        r = PyThread_acquire_lock_timed(g->lock, 20000 /* us */, 1);
        Py_END_ALLOW_THREADS
        if (r == PY_LOCK_ACQUIRED)
            return 0;
        if (Py_MakePendingCalls() < 0)
            return -1;
    }
}

static void gate_leave(GateObject *g)
{
    g->owner = 0;
    PyThread_release_lock(g->lock);
}

/* Raise what spec's refused(env, name, why) returns; NULL. */
static PyObject *gate_refuse(PyObject *spec, PyObject *env, PyObject *why)
{
    PyObject *exc = PyObject_CallFunctionObjArgs(PyTuple_GET_ITEM(spec, 3), env,
                                                 PyTuple_GET_ITEM(spec, 1), why, NULL);
    if (!exc)
        return NULL;
    if (PyExceptionInstance_Check(exc))
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    else
        PyErr_SetString(PyExc_TypeError, "Gate.call: refused() did not return an exception");
    Py_DECREF(exc);
    return NULL;
}

/* The exception being raised, taken (normalized, its traceback attached), or
 * NULL; and back. */
static PyObject *take_exc(void)
{
#if PY_VERSION_HEX >= 0x030C0000
    return PyErr_GetRaisedException();
#else
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    if (!t)
        return NULL;
    PyErr_NormalizeException(&t, &v, &tb);
    if (tb && v)
        PyException_SetTraceback(v, tb);
    Py_XDECREF(t);
    Py_XDECREF(tb);
    return v;
#endif
}

static void put_exc(PyObject *v) /* steals v */
{
#if PY_VERSION_HEX >= 0x030C0000
    PyErr_SetRaisedException(v);
#else
    PyObject *t = (PyObject *)Py_TYPE(v);
    Py_INCREF(t);
    PyErr_Restore(t, v, PyException_GetTraceback(v));
#endif
}

/* After a call during which close() came on this thread: close now (the call
 * no longer uses anything), then end with ClosedError ('closed during') -- its
 * cause the call's exception if it raised an Exception; a BaseException that
 * is no Exception (KeyboardInterrupt, SystemExit) goes on as it is.  `res` is
 * the call's result (stolen) or NULL. */
static PyObject *gate_finish(PyObject *spec, PyObject *env, PyObject *res)
{
    PyObject *exc = res ? NULL : take_exc();
    PyObject *r = PyObject_CallOneArg(PyTuple_GET_ITEM(spec, 4), env);
    if (!r) {
        if (!exc) {
            Py_DECREF(res);
            return NULL; /* the close's own error */
        }
        PyErr_WriteUnraisable(PyTuple_GET_ITEM(spec, 4)); /* the call's is the one to see */
    }
    Py_XDECREF(r);
    Py_XDECREF(res);
    if (exc && !PyObject_TypeCheck(exc, (PyTypeObject *)PyExc_Exception)) {
        put_exc(exc);
        return NULL;
    }
    gate_refuse(spec, env, why_closed_during);
    if (exc) {
        PyObject *closed = take_exc();
        if (!closed) { /* cannot happen: gate_refuse set an error */
            put_exc(exc);
            return NULL;
        }
        Py_INCREF(exc);
        PyException_SetContext(closed, exc); /* steals */
        PyException_SetCause(closed, exc);   /* steals */
        put_exc(closed);
    }
    return NULL;
}

PyDoc_STRVAR(gate_call_doc,
"call(spec, env, *args, **kwargs)\n\n"
"spec = (method, name, check, refused, finish_close): method(env, *args,\n"
"**kwargs) with the gate held by this thread.  Refused -- raising what\n"
"refused(env, name, why) returns -- when another call is inside (why\n"
"'busy'; 'reentrant' from the thread inside it), when close() started\n"
"('closed'), or when check is True and env._interrupted is set\n"
"('interrupted').  When close() came on this thread during the call,\n"
"finish_close(env) runs after it and the call ends with refused(env, name,\n"
"'closed during') -- caused by the call's exception if it raised an\n"
"Exception; a KeyboardInterrupt or SystemExit goes on as it is.");

static PyObject *gate_call(GateObject *g, PyObject *const *args, size_t nargsf,
                           PyObject *kwnames)
{
    const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs < 2 || !PyTuple_CheckExact(args[0]) || PyTuple_GET_SIZE(args[0]) != 5) {
        PyErr_SetString(PyExc_TypeError, "Gate.call(spec, env, ...): spec is a 5-tuple");
        return NULL;
    }
    PyObject *spec = args[0], *env = args[1];
    const unsigned long me = PyThread_get_thread_ident();
    if (!PyThread_acquire_lock(g->lock, NOWAIT_LOCK))
        return gate_refuse(spec, env,
                           g->closing ? why_closed : g->owner == me ? why_reentrant : why_busy);
    if (g->closing) {
        PyThread_release_lock(g->lock);
        return gate_refuse(spec, env, why_closed);
    }
    g->owner = me;
    if (PyTuple_GET_ITEM(spec, 2) == Py_True) {
        PyObject *mark = PyObject_GetAttr(env, str_interrupted);
        const int cut = mark ? PyObject_IsTrue(mark) : -1;
        Py_XDECREF(mark);
        if (cut) {
            gate_leave(g);
            return cut < 0 ? NULL : gate_refuse(spec, env, why_interrupted);
        }
    }
    PyObject *res = PyObject_Vectorcall(PyTuple_GET_ITEM(spec, 0), args + 1,
                                        (size_t)(nargs - 1), kwnames);
    gate_leave(g);
    if (g->pending)
        return gate_finish(spec, env, res);
    return res;
}

PyDoc_STRVAR(gate_close_doc,
"close(fn, env) -> bool\n\n"
"Mark the gate closing (every call from now on is refused), wait for a call\n"
"running on another thread to end, then fn(env) with the gate held; True.\n"
"On the thread inside a call: mark the close pending (the call runs\n"
"finish_close when it ends) and return False at once.");

static PyObject *gate_close(GateObject *g, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "Gate.close(fn, env) takes 2 arguments");
        return NULL;
    }
    g->closing = 1;
    if (g->owner == PyThread_get_thread_ident()) {
        g->pending = 1;
        Py_RETURN_FALSE;
    }
    if (gate_wait(g) < 0)
        return NULL;
    g->owner = PyThread_get_thread_ident();
    PyObject *r = PyObject_CallOneArg(args[0], args[1]);
    g->pending = 0;
    gate_leave(g);
    if (!r)
        return NULL;
    Py_DECREF(r);
    Py_RETURN_TRUE;
}

static PyObject *gate_owned(GateObject *g, PyObject *unused)
{
    (void)unused;
    return PyBool_FromLong(g->owner == PyThread_get_thread_ident());
}

static PyObject *gate_locked(GateObject *g, PyObject *unused)
{
    (void)unused;
    return PyBool_FromLong(g->owner != 0);
}

PyDoc_STRVAR(gate_acquire_doc,
"acquire(blocking=True) -> bool\n\n"
"Hold the gate as if another thread were inside a call (calls are refused\n"
"as 'busy'; close() waits) until release().  For tests and tools.");

static PyObject *gate_acquire(GateObject *g, PyObject *const *args, Py_ssize_t nargs)
{
    int blocking = 1;
    if (nargs > 1) {
        PyErr_SetString(PyExc_TypeError, "Gate.acquire(blocking=True)");
        return NULL;
    }
    if (nargs == 1 && (blocking = PyObject_IsTrue(args[0])) < 0)
        return NULL;
    if (!blocking) {
        if (!PyThread_acquire_lock(g->lock, NOWAIT_LOCK))
            Py_RETURN_FALSE;
    } else if (gate_wait(g) < 0) {
        return NULL;
    }
    g->owner = GATE_ASIDE;
    Py_RETURN_TRUE;
}

static PyObject *gate_release(GateObject *g, PyObject *unused)
{
    (void)unused;
    if (g->owner != GATE_ASIDE) {
        PyErr_SetString(PyExc_RuntimeError, "Gate.release: not held by acquire()");
        return NULL;
    }
    gate_leave(g);
    Py_RETURN_NONE;
}

static PyObject *gate_get_flag(GateObject *g, void *which)
{
    return PyBool_FromLong(which ? g->pending : g->closing);
}

static int gate_set_closing(GateObject *g, PyObject *v, void *unused)
{
    (void)unused;
    const int t = v ? PyObject_IsTrue(v) : -1;
    if (t < 0) {
        if (!v)
            PyErr_SetString(PyExc_AttributeError, "closing cannot be deleted");
        return -1;
    }
    g->closing = (char)(g->closing || t); /* once closing, always closing */
    return 0;
}

static PyMethodDef gate_methods[] = {
    {"call", (PyCFunction)(void (*)(void))gate_call, METH_FASTCALL | METH_KEYWORDS,
     gate_call_doc},
    {"close", (PyCFunction)(void (*)(void))gate_close, METH_FASTCALL, gate_close_doc},
    {"owned", (PyCFunction)gate_owned, METH_NOARGS,
     "owned() -> bool: this thread is inside a call (or a close)."},
    {"locked", (PyCFunction)gate_locked, METH_NOARGS,
     "locked() -> bool: a call, a close or acquire() holds the gate."},
    {"acquire", (PyCFunction)(void (*)(void))gate_acquire, METH_FASTCALL, gate_acquire_doc},
    {"release", (PyCFunction)gate_release, METH_NOARGS,
     "release(): give back what acquire() took."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef gate_getset[] = {
    {"closing", (getter)gate_get_flag, (setter)gate_set_closing,
     "close() started (settable to True, e.g. on a gate replacing another after fork())",
     NULL},
    {"pending", (getter)gate_get_flag, NULL,
     "close() came on the thread inside a call, which closes when it ends", (void *)1},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject GateType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "seer_env._fast.Gate",
    .tp_basicsize = sizeof(GateObject),
    .tp_dealloc = (destructor)gate_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One call at a time through an env, and none once it is closing (see gate.c).",
    .tp_methods = gate_methods,
    .tp_getset = gate_getset,
    .tp_new = gate_new,
};

int seer_fast_add_gate(PyObject *module)
{
    if (!(str_interrupted = PyUnicode_InternFromString("_interrupted")) ||
        !(why_busy = PyUnicode_InternFromString("busy")) ||
        !(why_reentrant = PyUnicode_InternFromString("reentrant")) ||
        !(why_closed = PyUnicode_InternFromString("closed")) ||
        !(why_interrupted = PyUnicode_InternFromString("interrupted")) ||
        !(why_closed_during = PyUnicode_InternFromString("closed during")))
        return -1;
    if (PyType_Ready(&GateType) < 0)
        return -1;
    Py_INCREF(&GateType);
    if (PyModule_AddObject(module, "Gate", (PyObject *)&GateType) < 0) {
        Py_DECREF(&GateType);
        return -1;
    }
    return 0;
}
