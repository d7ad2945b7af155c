/*
 * _fast.c -- the per-step work of the dict and batched APIs, in C.
 *
 * A ParallelEnv step turns a dict of actions into the runtime's action
 * buffer and the runtime's output buffers into five dicts keyed by agent.
 * Done in Python, that is several bytecode-dispatched operations per agent;
 * here it is one pass with CPython's C API.  A SeerVectorEnv step copies
 * the runtime's buffers into fresh arrays (NumPy's C API): one call instead
 * of a dozen.  Only seer_env.env calls these functions, from the thread
 * that holds the env (and the GIL) for the call.  Gate, the one-call-at-a-
 * time guard every env call passes through, is part of the module too,
 * in gate.c: what it does between taking the env and giving it back must
 * not be split by a signal handler, and in C nothing is.
 *
 * Nothing here validates user input beyond what it needs to stay fast and
 * safe: dict_actions returns False for anything unusual (a missing agent, a
 * bool, a 0-d array, a value outside int32, an array of another shape or
 * dtype) and the caller's checked Python path then raises the precise error.
 * The runtime itself checks every value ([0, n) for discrete actions, NaN
 * and inf for Box actions) before any state changes.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
/* NumPy's C API without its deprecated parts; the module runs on every NumPy
 * from 1.24 (the package's runtime requirement) whatever NumPy >= 2 built it
 * (newer headers may default to a newer target). */
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define NPY_TARGET_VERSION NPY_1_24_API_VERSION
#include <numpy/arrayobject.h>
#include "fast.h"
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* ---- NumPy arrays ------------------------------------------------------------ */

/* The runtime buffer `o` (`what`: "function: argument", for the error) if
 * it is a C-contiguous, aligned NumPy array of `ndim` dimensions and type
 * `type` in native byte order. */
static PyArrayObject *buffer_arg(PyObject *o, int ndim, int type, const char *what)
{
    if (!PyArray_Check(o) || PyArray_NDIM((PyArrayObject *)o) != ndim ||
        PyArray_TYPE((PyArrayObject *)o) != type ||
        !PyArray_ISCARRAY_RO((PyArrayObject *)o) ||
        !PyArray_ISNOTSWAPPED((PyArrayObject *)o)) {
        PyErr_Format(PyExc_ValueError, "%s is not a C-contiguous array of the runtime's "
                     "dtype and rank", what);
        return NULL;
    }
    return (PyArrayObject *)o;
}

/* A fresh, writable, C-contiguous copy of `a` (an aligned C-contiguous array). */
static PyObject *fresh_copy(PyArrayObject *a)
{
    PyArray_Descr *d = PyArray_DESCR(a);
    Py_INCREF(d);
    PyObject *c = PyArray_NewFromDescr(&PyArray_Type, d, PyArray_NDIM(a), PyArray_DIMS(a),
                                       NULL, NULL, 0, NULL);
    const size_t n = (size_t)PyArray_NBYTES(a);
    if (c && n)
        memcpy(PyArray_DATA((PyArrayObject *)c), PyArray_DATA(a), n);
    return c;
}

/* A read-only view of `a` whose base is `a` (what a.view() with the
 * writeable flag cleared gives). */
static PyObject *readonly_view(PyArrayObject *a)
{
    PyArray_Descr *d = PyArray_DESCR(a);
    Py_INCREF(d);
    PyObject *v = PyArray_NewFromDescr(&PyArray_Type, d, PyArray_NDIM(a), PyArray_DIMS(a),
                                       PyArray_STRIDES(a), PyArray_DATA(a),
                                       NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED, NULL);
    if (!v)
        return NULL;
    Py_INCREF(a);
    if (PyArray_SetBaseObject((PyArrayObject *)v, (PyObject *)a) < 0) { /* steals a */
        Py_DECREF(v);
        return NULL;
    }
    return v;
}

static PyObject *copy_or_view(PyArrayObject *a, int copy)
{
    return copy ? fresh_copy(a) : readonly_view(a);
}

/* ---- the dict API ----------------------------------------------------------- */

/* A NumPy scalar of an integer type ("numpy.int64", "numpy.uint8", ...). */
static int is_numpy_int_scalar(PyObject *v)
{
    const char *tn = Py_TYPE(v)->tp_name;
    return (strncmp(tn, "numpy.int", 9) == 0 || strncmp(tn, "numpy.uint", 10) == 0) &&
           PyIndex_Check(v);
}

/* 1: *out holds v as an int32; 0: not a plain integer in int32 range (the
 * checked path decides); -1: a Python error is set. */
static int int32_value(PyObject *v, int32_t *out)
{
    PyObject *ix = NULL;
    if (PyBool_Check(v))
        return 0;
    if (!PyLong_CheckExact(v)) {
        if (!is_numpy_int_scalar(v))
            return 0;
        ix = PyNumber_Index(v);
        if (!ix) {
            PyErr_Clear();
            return 0;
        }
        v = ix;
    }
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    Py_XDECREF(ix);
    if (x == -1 && PyErr_Occurred())
        return -1;
    if (overflow || x < INT32_MIN || x > INT32_MAX)
        return 0;
    *out = (int32_t)x;
    return 1;
}

/* A float32 keeping finite values finite: the runtime clips them to the Box
 * and refuses NaN and inf, so a huge finite float64 must not become inf. */
static float to_float32(double x)
{
    if (isfinite(x)) {
        if (x > FLT_MAX)
            x = FLT_MAX;
        else if (x < -FLT_MAX)
            x = -FLT_MAX;
    }
    return (float)x;
}

/* 1: `dim` floats written to out; 0: not a C-contiguous float32/float64
 * NumPy array of shape (dim,). */
static int box_value(PyObject *v, Py_ssize_t dim, float *out)
{
    if (strcmp(Py_TYPE(v)->tp_name, "numpy.ndarray") != 0)
        return 0;
    Py_buffer b;
    if (PyObject_GetBuffer(v, &b, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0) {
        PyErr_Clear();
        return 0;
    }
    int ok = b.ndim == 1 && b.shape[0] == dim && b.format && b.format[1] == '\0' &&
             (b.format[0] == 'f' || b.format[0] == 'd');
    if (ok && b.format[0] == 'f') {
        memcpy(out, b.buf, (size_t)dim * sizeof(float));
    } else if (ok) {
        const double *d = b.buf;
        for (Py_ssize_t k = 0; k < dim; k++)
            out[k] = to_float32(d[k]);
    }
    PyBuffer_Release(&b);
    return ok;
}

/* `names` as a tuple the caller owns a reference to: the tuple itself, or a
 * snapshot of a list.  A list read by index while user code runs (a key's
 * __hash__ or __eq__, which a dict lookup may call) can shrink or drop its
 * items under the reader; a tuple cannot change. */
static PyObject *names_tuple(PyObject *names, const char *who)
{
    if (PyTuple_CheckExact(names)) {
        Py_INCREF(names);
        return names;
    }
    if (PyList_CheckExact(names))
        return PyList_AsTuple(names);
    PyErr_Format(PyExc_TypeError, "%s: names must be a tuple or a list", who);
    return NULL;
}

PyDoc_STRVAR(dict_actions_doc,
"dict_actions(actions, names, rows, dst, dim, discrete) -> bool\n\n"
"Write actions[names[i]] into row rows[i] of dst (int32, or float32 x dim)\n"
"when actions holds exactly the agents of names (a tuple, or a list: read\n"
"as it is at the call) and every value is a plain int in int32 range\n"
"(discrete) or a float32/float64 array of shape (dim,) (box); return False\n"
"(having maybe written some rows) otherwise, and also when a key's\n"
"__hash__ or __eq__ raised an Exception (the checked path looks the agent up\n"
"again and names it).");

static PyObject *dict_actions(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *actions, *names_arg;
    Py_buffer rows, dst;
    Py_ssize_t dim;
    int discrete;
    if (!PyArg_ParseTuple(args, "O!Oy*w*np", &PyDict_Type, &actions, &names_arg, &rows, &dst,
                          &dim, &discrete))
        return NULL;
    PyObject *result = Py_False;
    /* the names are read while user code may run (see names_tuple); each
     * value is held while it is read */
    PyObject *names = names_tuple(names_arg, "dict_actions");
    if (!names) {
        result = NULL;
        goto done;
    }
    const Py_ssize_t n = PyTuple_GET_SIZE(names);
    const Py_ssize_t *row = rows.buf;
    const Py_ssize_t width = discrete ? 1 : dim;
    const Py_ssize_t nrows =
        width > 0 ? dst.len / (Py_ssize_t)(width * (Py_ssize_t)sizeof(int32_t)) : 0;
    if (dim < 1 || PyDict_GET_SIZE(actions) != n ||
        rows.len != n * (Py_ssize_t)sizeof(Py_ssize_t))
        goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (row[i] < 0 || row[i] >= nrows)
            goto done;
        PyObject *v = PyDict_GetItemWithError(actions, PyTuple_GET_ITEM(names, i));
        if (!v) {
            /* a key's __hash__/__eq__ failed: the checked path says which
             * agent; anything else (KeyboardInterrupt, MemoryError) goes up */
            if (PyErr_Occurred()) {
                if (PyErr_ExceptionMatches(PyExc_Exception))
                    PyErr_Clear();
                else
                    result = NULL;
            }
            goto done;
        }
        Py_INCREF(v); /* a later lookup's user code may drop it from the dict */
        int ok;
        if (discrete) {
            int32_t x;
            ok = int32_value(v, &x);
            if (ok > 0)
                ((int32_t *)dst.buf)[row[i]] = x;
        } else {
            ok = box_value(v, dim, (float *)dst.buf + row[i] * dim);
        }
        Py_DECREF(v);
        if (ok < 0)
            result = NULL;
        if (ok <= 0)
            goto done;
    }
    /* user code in a lookup may have added or removed keys: then the dict
     * no longer holds exactly these agents, and the checked path decides */
    if (PyDict_GET_SIZE(actions) == n)
        result = Py_True;
done:
    Py_XDECREF(names);
    PyBuffer_Release(&rows);
    PyBuffer_Release(&dst);
    Py_XINCREF(result);
    return result;
}

PyDoc_STRVAR(dict_outputs_doc,
"dict_outputs(names, rows, bufs) -> ((obs, rewards, terminations, truncations,\n"
"                                     infos), done)\n\n"
"The five dicts of a ParallelEnv step for the agents `names` (a tuple, or a\n"
"list: read as it is at the call), whose rows in\n"
"the runtime's buffers bufs = (obs (A, D) float32, reward (A,) float32,\n"
"terminated (A,) bool, truncated (A,) bool, info (A, info_dim) float64,\n"
"cols, keys, template) are `rows` (an intp array): obs[i] a row of a fresh\n"
"(n, D) array, float rewards, bool flags and {keys[k]: info[row][cols[k]]}\n"
"per agent (each a copy of `template`, a dict of the keys); `done` counts\n"
"the agents whose flags are set.");

static PyObject *dict_outputs_of(PyObject *names, PyObject *rows_arg, PyObject **b);

static PyObject *dict_outputs(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 3 || !(PyList_CheckExact(args[0]) || PyTuple_CheckExact(args[0])) ||
        !PyTuple_CheckExact(args[2]) || PyTuple_GET_SIZE(args[2]) != 8) {
        PyErr_SetString(PyExc_TypeError, "dict_outputs(names, rows, bufs): a tuple or a list, "
                        "an array and an 8-tuple");
        return NULL;
    }
    PyObject *b[8];
    for (int k = 0; k < 8; k++)
        b[k] = PyTuple_GET_ITEM(args[2], k);
    /* inserting a name runs its __hash__: the names must not change meanwhile */
    PyObject *names = names_tuple(args[0], "dict_outputs");
    if (!names)
        return NULL;
    PyObject *result = dict_outputs_of(names, args[1], b);
    Py_DECREF(names);
    return result;
}

/* dict_outputs with `names` a tuple (owned by the caller) and `b` the 8 buffers. */
static PyObject *dict_outputs_of(PyObject *names, PyObject *rows_arg, PyObject **b)
{
    const Py_ssize_t n = PyTuple_GET_SIZE(names);
    PyArrayObject *rows = buffer_arg(rows_arg, 1, NPY_INTP, "dict_outputs: rows");
    PyArrayObject *obs = rows ? buffer_arg(b[0], 2, NPY_FLOAT32, "dict_outputs: obs") : NULL;
    PyArrayObject *rew = obs ? buffer_arg(b[1], 1, NPY_FLOAT32, "dict_outputs: reward") : NULL;
    PyArrayObject *term = rew ? buffer_arg(b[2], 1, NPY_BOOL, "dict_outputs: terminated")
                              : NULL;
    PyArrayObject *trunc = term ? buffer_arg(b[3], 1, NPY_BOOL, "dict_outputs: truncated")
                                : NULL;
    PyArrayObject *info = trunc ? buffer_arg(b[4], 2, NPY_FLOAT64, "dict_outputs: info")
                                : NULL;
    if (!info)
        return NULL;
    PyObject *cols = b[5], *keys = b[6], *tmpl = b[7];
    if (!PyTuple_CheckExact(cols) || !PyTuple_CheckExact(keys) || !PyDict_CheckExact(tmpl)) {
        PyErr_SetString(PyExc_TypeError, "dict_outputs: cols and keys are tuples, template "
                        "a dict");
        return NULL;
    }
    const npy_intp A = PyArray_DIM(rew, 0), D = PyArray_DIM(obs, 1);
    const npy_intp info_dim = PyArray_DIM(info, 1);
    const Py_ssize_t nk = PyTuple_GET_SIZE(keys);
    if (PyArray_DIM(rows, 0) != n || PyArray_DIM(obs, 0) != A || PyArray_DIM(term, 0) != A ||
        PyArray_DIM(trunc, 0) != A || PyArray_DIM(info, 0) != A ||
        PyTuple_GET_SIZE(cols) != nk) {
        PyErr_SetString(PyExc_ValueError, "dict_outputs: buffers of inconsistent sizes");
        return NULL;
    }
    PyObject *d[5] = {NULL, NULL, NULL, NULL, NULL};
    PyObject *result = NULL, *obs_new = NULL;
    Py_ssize_t col_small[64], *col = nk <= 64 ? col_small : PyMem_New(Py_ssize_t, nk);
    if (!col)
        return PyErr_NoMemory();
    for (Py_ssize_t k = 0; k < nk; k++) {
        col[k] = PyLong_AsSsize_t(PyTuple_GET_ITEM(cols, k));
        if (col[k] == -1 && PyErr_Occurred())
            goto done;
        if (col[k] < 0 || col[k] >= info_dim) {
            PyErr_SetString(PyExc_ValueError, "dict_outputs: info column out of range");
            goto done;
        }
    }
    const npy_intp *row = PyArray_DATA(rows);
    for (Py_ssize_t i = 0; i < n; i++)
        if (row[i] < 0 || row[i] >= A) {
            PyErr_SetString(PyExc_ValueError, "dict_outputs: row out of range");
            goto done;
        }
    /* the live rows' observations, copied into one fresh (n, D) array whose
     * rows are the agents' arrays (writable views of it, safe to keep) */
    npy_intp od[2] = {n, D};
    if (!(obs_new = PyArray_SimpleNew(2, od, NPY_FLOAT32)))
        goto done;
    float *obs_out = PyArray_DATA((PyArrayObject *)obs_new);
    const float *obs_in = PyArray_DATA(obs);
    PyArray_Descr *f32 = PyArray_DESCR((PyArrayObject *)obs_new);
    /* sized for n agents up front: no table rebuilds while they go in */
    for (int j = 0; j < 5; j++)
        if (!(d[j] = _PyDict_NewPresized(n)))
            goto done;
    const float *rw = PyArray_DATA(rew);
    const npy_bool *te = PyArray_DATA(term), *tr = PyArray_DATA(trunc);
    const double *inf = PyArray_DATA(info);
    Py_ssize_t done_count = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        const npy_intp r = row[i];
        PyObject *name = PyTuple_GET_ITEM(names, i);
        float *o_row = obs_out + i * D;
        if (D)
            memcpy(o_row, obs_in + r * D, (size_t)D * sizeof(float));
        Py_INCREF(f32);
        PyObject *o = PyArray_NewFromDescr(&PyArray_Type, f32, 1, &od[1], NULL, o_row,
                                           NPY_ARRAY_CARRAY, NULL);
        if (!o)
            goto done;
        Py_INCREF(obs_new);
        if (PyArray_SetBaseObject((PyArrayObject *)o, obs_new) < 0) { /* steals obs_new */
            Py_DECREF(o);
            goto done;
        }
        int bad = PyDict_SetItem(d[0], name, o);
        Py_DECREF(o);
        PyObject *f = bad ? NULL : PyFloat_FromDouble((double)rw[r]);
        if (!f)
            goto done;
        bad = PyDict_SetItem(d[1], name, f);
        Py_DECREF(f);
        if (bad || PyDict_SetItem(d[2], name, te[r] ? Py_True : Py_False) ||
            PyDict_SetItem(d[3], name, tr[r] ? Py_True : Py_False))
            goto done;
        done_count += (te[r] || tr[r]);
        /* Every agent's info dict has the same keys: copying the template
         * (a table copy, no hashing or probing) is cheaper than inserting
         * the keys into a fresh dict. */
        PyObject *one = PyDict_Copy(tmpl);
        if (!one)
            goto done;
        for (Py_ssize_t k = 0; k < nk; k++) {
            PyObject *x = PyFloat_FromDouble(inf[r * info_dim + col[k]]);
            if (!x || PyDict_SetItem(one, PyTuple_GET_ITEM(keys, k), x)) {
                Py_XDECREF(x);
                Py_DECREF(one);
                goto done;
            }
            Py_DECREF(x);
        }
        bad = PyDict_SetItem(d[4], name, one);
        Py_DECREF(one);
        if (bad)
            goto done;
    }
    PyObject *five = PyTuple_New(5), *cnt = five ? PyLong_FromSsize_t(done_count) : NULL;
    if (cnt && (result = PyTuple_New(2))) {
        for (int j = 0; j < 5; j++) {
            PyTuple_SET_ITEM(five, j, d[j]); /* the tuple owns them */
            d[j] = NULL;
        }
        PyTuple_SET_ITEM(result, 0, five);
        PyTuple_SET_ITEM(result, 1, cnt);
    } else {
        Py_XDECREF(five);
        Py_XDECREF(cnt);
    }
done:
    for (int j = 0; j < 5; j++)
        Py_XDECREF(d[j]);
    Py_XDECREF(obs_new);
    if (col != col_small)
        PyMem_Free(col);
    return result;
}

/* ---- the batched API ---------------------------------------------------------- */

/* Interned "alive" and "active", the first keys of a batched step's infos. */
static PyObject *str_alive, *str_active;

/* Copy n integers of C type T from src into the int32 dst, as long long
 * (signed T) or unsigned long long (unsigned T); return 0 (dst maybe partly
 * written) at the first value outside int32, else 1. */
#define COPY_INTS(T, OUTSIDE)                                                             \
    do {                                                                                  \
        const T *in = (const T *)src;                                                     \
        for (npy_intp i = 0; i < n; i++) {                                                \
            if (OUTSIDE(in[i]))                                                           \
                return 0;                                                                 \
            dst[i] = (int32_t)in[i];                                                      \
        }                                                                                 \
        return 1;                                                                         \
    } while (0)
#define OUTSIDE_S(x) ((long long)(x) < INT32_MIN || (long long)(x) > INT32_MAX)
#define OUTSIDE_U(x) ((unsigned long long)(x) > (unsigned long long)INT32_MAX)

/* 1: the n values at src, of NumPy integer type `type`, are written to dst;
 * 0: another type, or a value outside int32. */
static int copy_ints(const void *src, int type, npy_intp n, int32_t *dst)
{
    switch (type) {
    case NPY_BYTE: COPY_INTS(npy_byte, OUTSIDE_S);
    case NPY_UBYTE: COPY_INTS(npy_ubyte, OUTSIDE_U);
    case NPY_SHORT: COPY_INTS(npy_short, OUTSIDE_S);
    case NPY_USHORT: COPY_INTS(npy_ushort, OUTSIDE_U);
    case NPY_INT: COPY_INTS(npy_int, OUTSIDE_S);
    case NPY_UINT: COPY_INTS(npy_uint, OUTSIDE_U);
    case NPY_LONG: COPY_INTS(npy_long, OUTSIDE_S);
    case NPY_ULONG: COPY_INTS(npy_ulong, OUTSIDE_U);
    case NPY_LONGLONG: COPY_INTS(npy_longlong, OUTSIDE_S);
    case NPY_ULONGLONG: COPY_INTS(npy_ulonglong, OUTSIDE_U);
    default: return 0; /* bool, floats, objects...: the checked path */
    }
}
#undef COPY_INTS
#undef OUTSIDE_S
#undef OUTSIDE_U

PyDoc_STRVAR(copy_actions_doc,
"copy_actions(src, dst) -> bool\n\n"
"Copy actions into the runtime's action buffer dst (int32 (B, A): discrete;\n"
"float32 (B, A, dim): box) when src is a NumPy array (exactly) of dst's\n"
"shape, C-contiguous, aligned, in native byte order, of integers in int32\n"
"range (discrete) or float32/float64 values (box; finite values stay\n"
"finite); False, with dst maybe partly written, otherwise (the checked path\n"
"decides).");

static PyObject *copy_actions(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "copy_actions(src, dst) takes 2 arguments");
        return NULL;
    }
    PyArrayObject *dst = (PyArrayObject *)args[1];
    if (!PyArray_Check(args[1]) || !PyArray_ISCARRAY(dst) || !PyArray_ISNOTSWAPPED(dst) ||
        (PyArray_TYPE(dst) != NPY_INT32 && PyArray_TYPE(dst) != NPY_FLOAT32)) {
        PyErr_SetString(PyExc_ValueError, "copy_actions: dst is not the runtime's action "
                        "buffer");
        return NULL;
    }
    if (!PyArray_CheckExact(args[0]))
        Py_RETURN_FALSE;
    PyArrayObject *src = (PyArrayObject *)args[0];
    if (!PyArray_SAMESHAPE(src, dst) || !PyArray_ISCARRAY_RO(src) || !PyArray_ISNOTSWAPPED(src))
        Py_RETURN_FALSE;
    const npy_intp n = PyArray_SIZE(dst);
    const void *in = PyArray_DATA(src);
    const int type = PyArray_TYPE(src);
    int ok = 0;
    if (PyArray_TYPE(dst) == NPY_INT32) {
        ok = copy_ints(in, type, n, PyArray_DATA(dst));
    } else if (type == NPY_FLOAT32) {
        memcpy(PyArray_DATA(dst), in, (size_t)n * sizeof(float));
        ok = 1;
    } else if (type == NPY_FLOAT64) {
        const double *d = in;
        float *out = PyArray_DATA(dst);
        for (npy_intp i = 0; i < n; i++)
            out[i] = to_float32(d[i]);
        ok = 1;
    }
    if (ok)
        Py_RETURN_TRUE;
    Py_RETURN_FALSE;
}

/* fin (a writable (B,) bool array) <- "no agent of instance i is alive"
 * (alive: a (B, A) bool buffer); returns how many instances have none, or
 * -1 with a ValueError when fin is not such an array. */
static Py_ssize_t finished_into(PyArrayObject *alive, PyObject *fin_o, const char *who)
{
    const npy_intp B = PyArray_DIM(alive, 0), A = PyArray_DIM(alive, 1);
    PyArrayObject *fin = (PyArrayObject *)fin_o;
    if (!PyArray_Check(fin_o) || PyArray_NDIM(fin) != 1 || PyArray_DIM(fin, 0) != B ||
        PyArray_TYPE(fin) != NPY_BOOL || !PyArray_ISCARRAY(fin)) {
        PyErr_Format(PyExc_ValueError, "%s: the finished mask is not a writable (B,) bool "
                     "array", who);
        return -1;
    }
    const npy_bool *a = PyArray_DATA(alive);
    npy_bool *f = PyArray_DATA(fin);
    Py_ssize_t count = 0;
    for (npy_intp i = 0; i < B; i++) {
        npy_bool any = 0;
        for (npy_intp j = 0; j < A; j++)
            any |= a[i * A + j];
        f[i] = !any;
        count += !any;
    }
    return count;
}

PyDoc_STRVAR(finished_doc,
"finished(alive, out) -> int\n\n"
"out[i] = no agent of instance i is alive (alive: bool (B, A), out: bool (B,));\n"
"returns how many instances finished.");

static PyObject *finished(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "finished(alive, out) takes 2 arguments");
        return NULL;
    }
    PyArrayObject *alive = buffer_arg(args[0], 2, NPY_BOOL, "finished: alive");
    const Py_ssize_t count = alive ? finished_into(alive, args[1], "finished") : -1;
    return count < 0 ? NULL : PyLong_FromSsize_t(count);
}

PyDoc_STRVAR(vec_outputs_doc,
"vec_outputs(bufs, copy, fin) -> ((obs, reward, terminated, truncated, infos), n)\n\n"
"A SeerVectorEnv call's outputs from the runtime's buffers\n"
"bufs = (obs, reward, terminated, truncated, alive, active, info, info_names):\n"
"fresh writable copies (copy true) or read-only views of the buffers (copy\n"
"false) of the first six; infos = {'alive': ..., 'active': ...,\n"
"info_names[j]: info[:, :, j] as a fresh C-contiguous (B, A) float64 array}\n"
"(fresh in either mode).  fin, a (B,) bool array, receives 'instance i has\n"
"no live agent' and n counts those instances (fin None: n is 0).");

static PyObject *vec_outputs(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 3 || !PyTuple_CheckExact(args[0]) || PyTuple_GET_SIZE(args[0]) != 8) {
        PyErr_SetString(PyExc_TypeError, "vec_outputs(bufs, copy, fin): bufs is an 8-tuple");
        return NULL;
    }
    PyObject *b[8];
    for (int k = 0; k < 8; k++)
        b[k] = PyTuple_GET_ITEM(args[0], k);
    const int copy = PyObject_IsTrue(args[1]);
    if (copy < 0)
        return NULL;
    PyArrayObject *obs = buffer_arg(b[0], 3, NPY_FLOAT32, "vec_outputs: obs");
    PyArrayObject *rew = obs ? buffer_arg(b[1], 2, NPY_FLOAT32, "vec_outputs: reward") : NULL;
    PyArrayObject *term = rew ? buffer_arg(b[2], 2, NPY_BOOL, "vec_outputs: terminated") : NULL;
    PyArrayObject *trunc = term ? buffer_arg(b[3], 2, NPY_BOOL, "vec_outputs: truncated") : NULL;
    PyArrayObject *alive = trunc ? buffer_arg(b[4], 2, NPY_BOOL, "vec_outputs: alive") : NULL;
    PyArrayObject *active = alive ? buffer_arg(b[5], 2, NPY_BOOL, "vec_outputs: active") : NULL;
    PyArrayObject *info = active ? buffer_arg(b[6], 3, NPY_FLOAT64, "vec_outputs: info") : NULL;
    if (!info)
        return NULL;
    PyObject *names = b[7];
    if (!PyTuple_CheckExact(names)) {
        PyErr_SetString(PyExc_TypeError, "vec_outputs: info_names is not a tuple");
        return NULL;
    }
    const npy_intp B = PyArray_DIM(rew, 0), A = PyArray_DIM(rew, 1);
    const npy_intp n_info = PyArray_DIM(info, 2);
    const npy_intp *d2 = PyArray_DIMS(rew);
    if (PyTuple_GET_SIZE(names) != n_info || PyArray_DIM(obs, 0) != B ||
        PyArray_DIM(obs, 1) != A || PyArray_DIM(info, 0) != B || PyArray_DIM(info, 1) != A ||
        !PyArray_SAMESHAPE(rew, term) || !PyArray_SAMESHAPE(rew, trunc) ||
        !PyArray_SAMESHAPE(rew, alive) || !PyArray_SAMESHAPE(rew, active)) {
        PyErr_SetString(PyExc_ValueError, "vec_outputs: buffers of inconsistent shapes");
        return NULL;
    }
    PyObject *out = PyTuple_New(5), *infos = NULL, *x = NULL;
    if (!out)
        return NULL;
    PyArrayObject *first[4] = {obs, rew, term, trunc};
    for (int k = 0; k < 4; k++) {
        if (!(x = copy_or_view(first[k], copy)))
            goto fail;
        PyTuple_SET_ITEM(out, k, x);
    }
    if (!(infos = _PyDict_NewPresized(2 + n_info)))
        goto fail;
    PyTuple_SET_ITEM(out, 4, infos);
    if (!(x = copy_or_view(alive, copy)) || PyDict_SetItem(infos, str_alive, x))
        goto fail_x;
    Py_DECREF(x);
    if (!(x = copy_or_view(active, copy)) || PyDict_SetItem(infos, str_active, x))
        goto fail_x;
    Py_DECREF(x);
    /* one fresh (B, A) array per info value: column j of the (B, A, n_info) buffer */
    const double *src = PyArray_DATA(info);
    const npy_intp cells = B * A;
    for (npy_intp j = 0; j < n_info; j++) {
        if (!(x = PyArray_SimpleNew(2, (npy_intp *)d2, NPY_FLOAT64)))
            goto fail;
        double *dst = PyArray_DATA((PyArrayObject *)x);
        for (npy_intp c = 0; c < cells; c++)
            dst[c] = src[c * n_info + j];
        if (PyDict_SetItem(infos, PyTuple_GET_ITEM(names, j), x))
            goto fail_x;
        Py_DECREF(x);
    }
    const Py_ssize_t n_fin =
        args[2] == Py_None ? 0 : finished_into(alive, args[2], "vec_outputs");
    if (n_fin < 0)
        goto fail;
    PyObject *n = PyLong_FromSsize_t(n_fin), *res = n ? PyTuple_New(2) : NULL;
    if (!res) {
        Py_XDECREF(n);
        Py_DECREF(out);
        return NULL;
    }
    PyTuple_SET_ITEM(res, 0, out);
    PyTuple_SET_ITEM(res, 1, n);
    return res;
fail_x:
    Py_XDECREF(x);
fail:
    Py_DECREF(out);
    return NULL;
}

static PyMethodDef fast_methods[] = {
    {"vec_outputs", (PyCFunction)(void (*)(void))vec_outputs, METH_FASTCALL, vec_outputs_doc},
    {"copy_actions", (PyCFunction)(void (*)(void))copy_actions, METH_FASTCALL,
     copy_actions_doc},
    {"finished", (PyCFunction)(void (*)(void))finished, METH_FASTCALL, finished_doc},
    {"dict_actions", dict_actions, METH_VARARGS, dict_actions_doc},
    {"dict_outputs", (PyCFunction)(void (*)(void))dict_outputs, METH_FASTCALL,
     dict_outputs_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef fast_module = {
    PyModuleDef_HEAD_INIT, "_fast",
    "The dict and batched APIs' per-step work in C, and the envs' gate (used by "
    "seer_env.env).", -1,
    fast_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__fast(void)
{
    import_array();
    if (!(str_alive = PyUnicode_InternFromString("alive")) ||
        !(str_active = PyUnicode_InternFromString("active")))
        return NULL;
    PyObject *m = PyModule_Create(&fast_module);
    if (!m)
        return NULL;
    if (seer_fast_add_gate(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
