/*
 * axle-lua-host: runs a Lua 5.4 script with the axle module built in.
 *
 *   axle-lua-host SCRIPT [ARGS...]
 *
 * The script sees its arguments in `arg` (arg[0] = SCRIPT, as with lua5.4)
 * and as `...`; require("axle") returns the module linked into this program
 * and require("host") (also the global `host`) the few services a script
 * needs from its host:
 *
 *   host.sleep(ms)            pause the whole program
 *   host.listdir(path)        sorted entry names (no "." or "..") | nil, msg
 *   host.readfile(path)       the file's bytes | nil, msg
 *   host.spawn(fn, ...)       run fn(...) as a task (a coroutine), now, until
 *                             it first yields
 *   host.run()                resume tasks until all have finished
 *
 * Tasks cooperate through ev:await(): it yields the event's fd, and host.run
 * polls the fds of all waiting tasks and resumes those whose run completed.
 * A task that yields without an fd is resumed on the next round. An error in
 * a task ends host.run with that error and the task's traceback.
 *
 * Exit status: 0, or 1 when the script raised an error, or the script's own
 * integer return value.
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "axle_lua.h"

/* ---- files and time ----------------------------------------------------- */

static int h_sleep(lua_State* L) {
  lua_Number ms = luaL_checknumber(L, 1);
  if (!(ms > 0)) return 0; /* also NaN */
  if (ms > 1e12) ms = 1e12;
  time_t sec = (time_t)(ms / 1000);
  struct timespec ts = {sec, (long)((ms - (lua_Number)sec * 1000) * 1e6)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
  return 0;
}

static int fail_errno(lua_State* L, const char* path) {
  int e = errno;
  lua_pushnil(L);
  lua_pushfstring(L, "%s: %s", path, strerror(e));
  return 2;
}

static int cmp_names(const void* a, const void* b) {
  return strcmp(*(const char* const*)a, *(const char* const*)b);
}

static int h_listdir(lua_State* L) {
  const char* path = luaL_checkstring(L, 1);
  DIR* d = opendir(path);
  if (!d) return fail_errno(L, path);
  /* Names go into a Lua table first (the collector owns them even if an
   * allocation raises), then are sorted through a pointer array. */
  lua_newtable(L);
  int tbl = lua_gettop(L);
  lua_Integer n = 0;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    lua_pushstring(L, e->d_name);
    lua_rawseti(L, tbl, ++n);
  }
  closedir(d);
  const char** names = (const char**)lua_newuserdatauv(L, sizeof(char*) * (size_t)(n + 1), 0);
  for (lua_Integer i = 1; i <= n; ++i) {
    lua_rawgeti(L, tbl, i);
    names[i - 1] = lua_tostring(L, -1); /* kept alive by tbl, which is unchanged below */
    lua_pop(L, 1);
  }
  qsort(names, (size_t)n, sizeof(char*), cmp_names);
  lua_createtable(L, (int)n, 0);
  for (lua_Integer i = 1; i <= n; ++i) {
    lua_pushstring(L, names[i - 1]);
    lua_rawseti(L, -2, i);
  }
  return 1;
}

static int h_readfile(lua_State* L) {
  const char* path = luaL_checkstring(L, 1);
  FILE* f = fopen(path, "rb");
  if (!f) return fail_errno(L, path);
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  size_t got;
  do {
    char* p = luaL_prepbuffer(&b);
    got = fread(p, 1, LUAL_BUFFERSIZE, f);
    luaL_addsize(&b, got);
  } while (got == LUAL_BUFFERSIZE);
  int err = ferror(f);
  fclose(f);
  if (err) {
    errno = EIO;
    return fail_errno(L, path);
  }
  luaL_pushresult(&b);
  return 1;
}

/* ---- tasks -------------------------------------------------------------- */

typedef struct task {
  lua_State* co;
  int ref; /* registry reference that keeps the coroutine alive */
  int fd;  /* what it waits on; -1 = resume on the next round */
} task;

typedef struct sched {
  task* v;
  int n, cap;
  struct pollfd* fds; /* scratch for host.run, grown with v */
  lua_State** ready;
  int running;
} sched;

static int sched_gc(lua_State* L) {
  sched* S = (sched*)lua_touserdata(L, 1);
  free(S->v);
  free(S->fds);
  free(S->ready);
  S->v = NULL;
  S->fds = NULL;
  S->ready = NULL;
  S->n = S->cap = 0;
  return 0;
}

static int find_task(const sched* S, const lua_State* co) {
  for (int i = 0; i < S->n; ++i)
    if (S->v[i].co == co) return i;
  return -1;
}

/* Resumes task i with nargs values already on its stack. On error the task
 * is dropped, its error (with its traceback) is pushed on L and 0 returned,
 * for the caller to raise once its own state is consistent. */
static int step(lua_State* L, sched* S, int i, int nargs) {
  lua_State* co = S->v[i].co;
  int nres = 0;
  int st = lua_resume(co, L, nargs, &nres);
  if (st == LUA_YIELD) {
    /* ev:await() yields (fd, event); anything else is a plain yield. */
    S->v[i].fd = nres >= 1 && lua_isinteger(co, -nres) ? (int)lua_tointeger(co, -nres) : -1;
    lua_pop(co, nres);
    return 1;
  }
  int ref = S->v[i].ref;
  S->v[i] = S->v[--S->n];
  if (st != LUA_OK) {
    const char* msg = lua_tostring(co, -1);
    luaL_traceback(L, co, msg ? msg : "(error object is not a string)", 0);
    luaL_unref(L, LUA_REGISTRYINDEX, ref);
    return 0;
  }
  luaL_unref(L, LUA_REGISTRYINDEX, ref);
  return 1;
}

static int h_spawn(lua_State* L) {
  sched* S = (sched*)lua_touserdata(L, lua_upvalueindex(1));
  luaL_checktype(L, 1, LUA_TFUNCTION);
  int nargs = lua_gettop(L) - 1;
  if (S->n == S->cap) {
    int cap = S->cap ? 2 * S->cap : 16;
    task* v = (task*)realloc(S->v, sizeof(task) * (size_t)cap);
    if (!v) return luaL_error(L, "host.spawn: out of memory");
    S->v = v;
    struct pollfd* fds = (struct pollfd*)realloc(S->fds, sizeof(struct pollfd) * (size_t)cap);
    if (!fds) return luaL_error(L, "host.spawn: out of memory");
    S->fds = fds;
    lua_State** ready = (lua_State**)realloc(S->ready, sizeof(lua_State*) * (size_t)cap);
    if (!ready) return luaL_error(L, "host.spawn: out of memory");
    S->ready = ready;
    S->cap = cap;
  }
  lua_State* co = lua_newthread(L);
  lua_insert(L, 1);
  lua_xmove(L, co, nargs + 1); /* the function and its arguments */
  int ref = luaL_ref(L, LUA_REGISTRYINDEX);
  S->v[S->n++] = (task){co, ref, -1};
  if (!step(L, S, S->n - 1, nargs)) return lua_error(L);
  return 0;
}

static int h_run(lua_State* L) {
  sched* S = (sched*)lua_touserdata(L, lua_upvalueindex(1));
  if (S->running) return luaL_error(L, "host.run: already running (called from a task?)");
  S->running = 1;
  while (S->n > 0) {
    int nfds = 0, spin = 0;
    for (int i = 0; i < S->n; ++i) {
      if (S->v[i].fd < 0) {
        spin = 1;
        continue;
      }
      S->fds[nfds].fd = S->v[i].fd;
      S->fds[nfds].events = POLLIN;
      S->fds[nfds].revents = 0;
      ++nfds;
    }
    if (poll(S->fds, (nfds_t)nfds, spin ? 0 : -1) < 0 && errno != EINTR) {
      S->running = 0;
      return luaL_error(L, "host.run: poll: %s", strerror(errno));
    }
    /* Snapshot first: resumed tasks may spawn others or finish, which
     * reorders S->v. */
    int nready = 0, k = 0;
    for (int i = 0; i < S->n; ++i) {
      int ready = S->v[i].fd < 0;
      if (!ready) ready = (S->fds[k++].revents & (POLLIN | POLLERR | POLLHUP | POLLNVAL)) != 0;
      if (ready) S->ready[nready++] = S->v[i].co;
    }
    for (int r = 0; r < nready; ++r) {
      int i = find_task(S, S->ready[r]);
      if (i < 0) continue;
      if (!step(L, S, i, 0)) {
        S->running = 0;
        return lua_error(L);
      }
    }
  }
  S->running = 0;
  return 0;
}

static int luaopen_host(lua_State* L) {
  static const luaL_Reg plain[] = {
      {"sleep", h_sleep}, {"listdir", h_listdir}, {"readfile", h_readfile}, {NULL, NULL}};
  static const luaL_Reg tasks[] = {{"spawn", h_spawn}, {"run", h_run}, {NULL, NULL}};
  luaL_newlib(L, plain);
  sched* S = (sched*)lua_newuserdatauv(L, sizeof(*S), 0);
  memset(S, 0, sizeof(*S));
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, sched_gc);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  luaL_setfuncs(L, tasks, 1); /* the scheduler is their shared upvalue */
  return 1;
}

/* ---- main --------------------------------------------------------------- */

static int msgh(lua_State* L) {
  const char* msg = lua_tostring(L, 1);
  if (!msg) {
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) return 1;
    msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  }
  luaL_traceback(L, L, msg, 1);
  return 1;
}

/* Puts the script's directory first on package.path, so a script can
 * require its neighbours wherever it is started from. */
static void add_script_dir(lua_State* L, const char* script) {
  const char* slash = strrchr(script, '/');
  lua_getglobal(L, "package");
  if (slash) lua_pushlstring(L, script, (size_t)(slash - script));
  else lua_pushliteral(L, ".");
  lua_getfield(L, -2, "path");
  lua_pushfstring(L, "%s/?.lua;%s", lua_tostring(L, -2), lua_tostring(L, -1));
  lua_setfield(L, -4, "path");
  lua_pop(L, 3);
}

static int pmain(lua_State* L) {
  int argc = (int)lua_tointeger(L, 1);
  char** argv = (char**)lua_touserdata(L, 2);
  luaL_openlibs(L);
  luaL_requiref(L, "axle", luaopen_axle, 0);
  luaL_requiref(L, "host", luaopen_host, 1);
  lua_pop(L, 2);
  const char* script = argv[1];
  add_script_dir(L, script);
  lua_createtable(L, argc - 2, 2);
  for (int i = 0; i < argc; ++i) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i - 1);
  }
  lua_setglobal(L, "arg");

  lua_pushcfunction(L, msgh);
  int h = lua_gettop(L);
  if (luaL_loadfile(L, script) != LUA_OK) return lua_error(L);
  for (int i = 2; i < argc; ++i) lua_pushstring(L, argv[i]);
  if (lua_pcall(L, argc - 2, 1, h) != LUA_OK) return lua_error(L);
  if (lua_isinteger(L, -1)) return 1;
  lua_pushinteger(L, lua_type(L, -1) == LUA_TBOOLEAN && !lua_toboolean(L, -1) ? 1 : 0);
  return 1;
}

int main(int argc, char** argv) {
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    fprintf(argc < 2 ? stderr : stdout,
            "usage: %s SCRIPT [ARGS...]\n"
            "Runs a Lua 5.4 script with require(\"axle\") and the host module built in.\n",
            argv[0]);
    return argc < 2 ? 2 : 0;
  }
  lua_State* L = luaL_newstate();
  if (!L) {
    fprintf(stderr, "axle-lua-host: cannot create a Lua state\n");
    return 1;
  }
  /* Everything that can raise runs under pcall, so errors are reported and
   * lua_close() still frees every handle the script left open. */
  lua_pushcfunction(L, pmain);
  lua_pushinteger(L, argc);
  lua_pushlightuserdata(L, argv);
  int status = 0;
  if (lua_pcall(L, 2, 1, 0) != LUA_OK) {
    const char* msg = lua_tostring(L, -1);
    fprintf(stderr, "axle-lua-host: %s\n", msg ? msg : "(error object is not a string)");
    status = 1;
  } else {
    status = (int)lua_tointeger(L, -1);
  }
  lua_close(L);
  return status;
}
