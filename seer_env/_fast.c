/*
 * _fast.c -- the per-step work of the PettingZoo dict API, in C.
 *
 * A ParallelEnv step turns a dict of actions into the runtime's action
 * buffer and the runtime's output buffers into five dicts keyed by agent.
 * Done in Python, that is several bytecode-dispatched operations per agent;
 * here it is one pass with CPython's C API.  Only seer_env._base calls these
 * functions, from the thread that holds the env (and the GIL) for the call.
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
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

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

PyDoc_STRVAR(dict_actions_doc,
"dict_actions(actions, names, rows, dst, dim, discrete) -> bool\n\n"
"Write actions[names[i]] into row rows[i] of dst (int32, or float32 x dim)\n"
"when actions holds exactly the agents of names and every value is a plain\n"
"int in int32 range (discrete) or a float32/float64 array of shape (dim,)\n"
"(box); return False (having maybe written some rows) otherwise.");

static PyObject *dict_actions(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *actions, *names;
    Py_buffer rows, dst;
    Py_ssize_t dim;
    int discrete;
    if (!PyArg_ParseTuple(args, "O!O!y*w*np", &PyDict_Type, &actions, &PyList_Type, &names,
                          &rows, &dst, &dim, &discrete))
        return NULL;
    PyObject *result = Py_False;
    const Py_ssize_t n = PyList_GET_SIZE(names);
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
        PyObject *v = PyDict_GetItemWithError(actions, PyList_GET_ITEM(names, i));
        if (!v) {
            if (PyErr_Occurred())
                result = NULL;
            goto done;
        }
        if (discrete) {
            int32_t x;
            int r = int32_value(v, &x);
            if (r < 0)
                result = NULL;
            if (r <= 0)
                goto done;
            ((int32_t *)dst.buf)[row[i]] = x;
        } else if (!box_value(v, dim, (float *)dst.buf + row[i] * dim)) {
            goto done;
        }
    }
    result = Py_True;
done:
    PyBuffer_Release(&rows);
    PyBuffer_Release(&dst);
    Py_XINCREF(result);
    return result;
}

PyDoc_STRVAR(dict_outputs_doc,
"dict_outputs(names, rows, obs, reward, terminated, truncated, info, info_dim,\n"
"             cols, keys) -> (obs, rewards, terminations, truncations, infos, done)\n\n"
"The five dicts of a ParallelEnv step for the agents `names`, whose rows in\n"
"the runtime's buffers are `rows`: obs[i] (row i of `obs`, a fresh array\n"
"of the live rows), float rewards, bool flags and {keys[k]: info[row][cols[k]]}\n"
"per agent; `done` counts the agents whose flags are set.");

static PyObject *dict_outputs(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *names, *obs, *cols, *keys;
    Py_buffer rows, reward, term, trunc, info;
    Py_ssize_t info_dim;
    if (!PyArg_ParseTuple(args, "O!y*Oy*y*y*y*nO!O!", &PyList_Type, &names, &rows, &obs,
                          &reward, &term, &trunc, &info, &info_dim, &PyTuple_Type, &cols,
                          &PyTuple_Type, &keys))
        return NULL;
    PyObject *d[5] = {NULL, NULL, NULL, NULL, NULL};
    PyObject *result = NULL, *tmpl = NULL;
    const Py_ssize_t n = PyList_GET_SIZE(names), nk = PyTuple_GET_SIZE(keys);
    const Py_ssize_t A = reward.len / (Py_ssize_t)sizeof(float);
    Py_ssize_t col[64];
    if (rows.len != n * (Py_ssize_t)sizeof(Py_ssize_t) || PyTuple_GET_SIZE(cols) != nk ||
        nk > 64 || term.len < A || trunc.len < A || info_dim < 0 ||
        info.len < A * info_dim * (Py_ssize_t)sizeof(double)) {
        PyErr_SetString(PyExc_ValueError, "dict_outputs: buffers of inconsistent sizes");
        goto done;
    }
    for (Py_ssize_t k = 0; k < nk; k++) {
        col[k] = PyLong_AsSsize_t(PyTuple_GET_ITEM(cols, k));
        if (col[k] == -1 && PyErr_Occurred())
            goto done;
        if (col[k] < 0 || col[k] >= info_dim) {
            PyErr_SetString(PyExc_ValueError, "dict_outputs: info column out of range");
            goto done;
        }
    }
    /* sized for n agents up front: no table rebuilds while they go in */
    for (int j = 0; j < 5; j++)
        if (!(d[j] = _PyDict_NewPresized(n)))
            goto done;
    /* Every agent's info dict has the same keys: copying a template with
     * them (a table copy, no hashing or probing) is cheaper than inserting
     * the keys into a fresh dict. */
    if (!(tmpl = PyDict_New()))
        goto done;
    for (Py_ssize_t k = 0; k < nk; k++)
        if (PyDict_SetItem(tmpl, PyTuple_GET_ITEM(keys, k), Py_None))
            goto done;
    const Py_ssize_t *row = rows.buf;
    const float *rw = reward.buf;
    const uint8_t *te = term.buf, *tr = trunc.buf;
    const double *inf = info.buf;
    Py_ssize_t done_count = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        const Py_ssize_t r = row[i];
        if (r < 0 || r >= A) {
            PyErr_SetString(PyExc_ValueError, "dict_outputs: row out of range");
            goto done;
        }
        PyObject *name = PyList_GET_ITEM(names, i);
        PyObject *o = PySequence_GetItem(obs, i);
        if (!o)
            goto done;
        int bad = PyDict_SetItem(d[0], name, o);
        Py_DECREF(o);
        PyObject *f = PyFloat_FromDouble((double)rw[r]);
        if (bad || !f) {
            Py_XDECREF(f);
            goto done;
        }
        bad = PyDict_SetItem(d[1], name, f);
        Py_DECREF(f);
        if (bad || PyDict_SetItem(d[2], name, te[r] ? Py_True : Py_False) ||
            PyDict_SetItem(d[3], name, tr[r] ? Py_True : Py_False))
            goto done;
        done_count += (te[r] || tr[r]);
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
    result = Py_BuildValue("(NNNNNn)", d[0], d[1], d[2], d[3], d[4], done_count);
    if (result)
        for (int j = 0; j < 5; j++)
            d[j] = NULL; /* the tuple owns them */
done:
    for (int j = 0; j < 5; j++)
        Py_XDECREF(d[j]);
    Py_XDECREF(tmpl);
    PyBuffer_Release(&rows);
    PyBuffer_Release(&reward);
    PyBuffer_Release(&term);
    PyBuffer_Release(&trunc);
    PyBuffer_Release(&info);
    return result;
}

/* Read element i of a buffer of integer format `fmt` as a long long; 0 if the
 * format is not an integer one. */
static int int_at(const Py_buffer *b, Py_ssize_t i, long long *out)
{
    const char *fmt = b->format ? b->format : "B";
    if (fmt[0] == '=' || fmt[0] == '@' || fmt[0] == '<')
        fmt++;
    if (fmt[0] == '\0' || fmt[1] != '\0')
        return 0;
    const char *p = (const char *)b->buf + i * b->itemsize;
    switch (fmt[0]) {
    case 'b': *out = *(const signed char *)p; return b->itemsize == 1;
    case 'B': *out = *(const unsigned char *)p; return b->itemsize == 1;
    case 'h': *out = *(const short *)p; return b->itemsize == sizeof(short);
    case 'H': *out = *(const unsigned short *)p; return b->itemsize == sizeof(short);
    case 'i': *out = *(const int *)p; return b->itemsize == sizeof(int);
    case 'I': *out = *(const unsigned int *)p; return b->itemsize == sizeof(int);
    case 'l': *out = *(const long *)p; return b->itemsize == sizeof(long);
    case 'q': *out = *(const long long *)p; return b->itemsize == sizeof(long long);
    case 'L': case 'Q': {
        unsigned long long u = b->itemsize == sizeof(long) && fmt[0] == 'L'
                                   ? *(const unsigned long *)p
                                   : *(const unsigned long long *)p;
        if (b->itemsize != 8 || u > (unsigned long long)INT32_MAX)
            return 0;
        *out = (long long)u;
        return 1;
    }
    default: return 0;
    }
}

PyDoc_STRVAR(copy_actions_doc,
"copy_actions(src, dst, discrete) -> bool\n\n"
"Copy a C-contiguous NumPy array of actions into the runtime's action buffer\n"
"dst (as many elements): integers in int32 range (discrete) or float32/\n"
"float64 values (box; finite values stay finite); False, with dst maybe\n"
"partly written, when src is of another kind (the checked path decides).");

static PyObject *copy_actions(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *src;
    Py_buffer dst;
    int discrete;
    if (!PyArg_ParseTuple(args, "Ow*p", &src, &dst, &discrete))
        return NULL;
    PyObject *result = Py_False;
    Py_buffer b;
    if (strcmp(Py_TYPE(src)->tp_name, "numpy.ndarray") != 0)
        goto done;
    if (PyObject_GetBuffer(src, &b, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0) {
        PyErr_Clear();
        goto done;
    }
    const Py_ssize_t n = b.itemsize > 0 ? b.len / b.itemsize : 0;
    if (n * 4 == dst.len) {
        if (discrete) {
            int32_t *out = dst.buf;
            long long x = 0;
            Py_ssize_t i = 0;
            for (; i < n; i++) {
                if (!int_at(&b, i, &x) || x < INT32_MIN || x > INT32_MAX)
                    break;
                out[i] = (int32_t)x;
            }
            result = i == n ? Py_True : Py_False;
        } else if (b.format && b.format[1] == '\0' && b.format[0] == 'f') {
            memcpy(dst.buf, b.buf, (size_t)dst.len);
            result = Py_True;
        } else if (b.format && b.format[1] == '\0' && b.format[0] == 'd') {
            const double *d = b.buf;
            float *out = dst.buf;
            for (Py_ssize_t i = 0; i < n; i++)
                out[i] = to_float32(d[i]);
            result = Py_True;
        }
    }
    PyBuffer_Release(&b);
done:
    PyBuffer_Release(&dst);
    Py_INCREF(result);
    return result;
}

PyDoc_STRVAR(finished_doc,
"finished(alive, out) -> int\n\n"
"out[i] = no agent of instance i is alive (alive: bool (B, A), out: bool (B,));\n"
"returns how many instances finished.");

static PyObject *finished(PyObject *module, PyObject *args)
{
    (void)module;
    Py_buffer alive, out;
    if (!PyArg_ParseTuple(args, "y*w*", &alive, &out))
        return NULL;
    Py_ssize_t count = 0;
    const Py_ssize_t B = out.len;
    if (B <= 0 || alive.len % B != 0) {
        PyErr_SetString(PyExc_ValueError, "finished: alive is not (B, A)");
        count = -1;
    } else {
        const Py_ssize_t A = alive.len / B;
        const uint8_t *a = alive.buf;
        uint8_t *o = out.buf;
        for (Py_ssize_t i = 0; i < B; i++) {
            uint8_t any = 0;
            for (Py_ssize_t j = 0; j < A; j++)
                any |= a[i * A + j];
            o[i] = !any;
            count += !any;
        }
    }
    PyBuffer_Release(&alive);
    PyBuffer_Release(&out);
    return count < 0 ? NULL : PyLong_FromSsize_t(count);
}

static PyMethodDef fast_methods[] = {
    {"copy_actions", copy_actions, METH_VARARGS, copy_actions_doc},
    {"finished", finished, METH_VARARGS, finished_doc},
    {"dict_actions", dict_actions, METH_VARARGS, dict_actions_doc},
    {"dict_outputs", dict_outputs, METH_VARARGS, dict_outputs_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef fast_module = {
    PyModuleDef_HEAD_INIT, "_fast",
    "The PettingZoo dict API's per-step work in C (used by seer_env._base).", -1,
    fast_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__fast(void) { return PyModule_Create(&fast_module); }
