/* Shared between the files of the Lua module; not installed. */
#ifndef AXLE_LUA_INTERNAL_H_
#define AXLE_LUA_INTERNAL_H_

#include <lauxlib.h>
#include <lua.h>

#include "axle/axle.h"

#define LAX_TENSOR "axle.tensor"
#define LAX_SESSION "axle.session"
#define LAX_EVENT "axle.event"

/* One runtime per lua_State, shared by its sessions. Reference counted in C
 * rather than left to the garbage collector's ordering: a session must be
 * released before its runtime, and finalizers of objects that die in the
 * same cycle run in an order we do not control. Only the Lua thread touches
 * refs, so it needs no lock. */
typedef struct lax_runtime {
  axle_runtime_t* rt;
  int refs;
} lax_runtime;

/* Library memory held by the state's tensor userdata. A tensor userdata is a
 * small box, so the collector sees a few bytes per tensor and, left alone,
 * lets megabytes of tensor data pile up between cycles (the generational
 * mode lua5.4 starts in is the worst case: a result still referenced while
 * the next is made survives two minor collections and waits for a major
 * one). lax_gc_check() runs a full collection whenever the tensors created
 * since the last one exceed the larger of 64 MiB, the bytes that survived
 * it and the Lua heap, which bounds the garbage and keeps the collection
 * cost amortized per byte allocated. Lives in a finalizer-less userdata in
 * the registry, so it outlasts every tensor's finalizer, even in
 * lua_close(). */
typedef struct lax_gc {
  size_t live;      /* bytes referenced by open tensor userdata */
  size_t since;     /* bytes of tensors created since the last check's collection */
  size_t threshold; /* since above this: collect */
} lax_gc;

typedef struct lax_tensor {
  axle_tensor_t* t; /* NULL once closed */
  lax_gc* gc;
  size_t bytes; /* counted in gc->live while t is set */
} lax_tensor;

/* Pushes nil, the thread's status message and the status name; returns 3 so
 * a C function can `return lax_fail(L, st);`. */
int lax_fail(lua_State* L, axle_status_t st);
/* The state's runtime, created on first use; NULL (status in *st) when
 * creation failed. The caller adds a reference if it keeps the pointer. */
lax_runtime* lax_runtime_get(lua_State* L, axle_status_t* st);
void lax_runtime_unref(lax_runtime* r);

lax_gc* lax_gc_state(lua_State* L);
/* Call only where the stack and every handle are consistent: it may collect
 * and so run finalizers. */
void lax_gc_check(lua_State* L, lax_gc* g);

/* Tensors. */
void lax_tensor_register(lua_State* L);
/* Pushes a new tensor userdata that owns nothing yet; returns its slot so the
 * caller can store a tensor after every allocation that may raise is done. */
lax_tensor* lax_tensor_push_empty(lua_State* L);
/* Counts T->t, just stored, in the state's tensor memory. */
void lax_tensor_adopt(lax_tensor* T);
/* Argument idx as an open tensor; raises on anything else. */
lax_tensor* lax_tensor_check(lua_State* L, int idx);
/* Value at idx as an open tensor (NULL if it is not a tensor); raises if it
 * is a closed one. */
lax_tensor* lax_tensor_test(lua_State* L, int idx);
/* axle.tensor(shape [, dtype [, data]]). */
int lax_tensor_new(lua_State* L);
/* Dtype from its name ("float32", ...); raises on an unknown name. */
axle_dtype_t lax_dtype_check(lua_State* L, int idx);

/* Sessions and events. */
void lax_session_register(lua_State* L);
int lax_session_new(lua_State* L);
/* The completion fd of the open event at idx; raises if it is closed. */
int lax_event_fd_at(lua_State* L, int idx);

#endif /* AXLE_LUA_INTERNAL_H_ */
