-- Inference from built Keras-style models in several threads at once: a small C host (compiled
-- here against the build's libfastnn_host.a, as examples/embed_host.c is) runs 4 threads, each
-- with its own lua_State, each building the same Sequential and Graph models, loading the weights
-- this spec saved and calling predict repeatedly; every thread must give this process's figures.
local fnn = require 'fastnn'
local nn = fnn.nn

local function quote(s) return "'" .. tostring(s):gsub("'", [['\'']]) .. "'" end
local function write_file(path, text)
   local f = assert(io.open(path, 'wb'))
   f:write(text)
   f:close()
end
local function run(cmd)
   local p = io.popen(cmd .. ' 2>&1; echo "rc=$?"')
   local out = p:read('*a')
   p:close()
   return out
end

local cwd = io.popen('pwd'):read('*l')
local lib = os.getenv('FASTNN_LIB') or (cwd .. '/build/libfastnn.so')
if lib:sub(1, 1) ~= '/' then lib = cwd .. '/' .. lib end
local build_dir = lib:match('^(.*)/[^/]*$')

local HOST = [[
#include "fastnn_host.h"
#include <lauxlib.h>
#include <lualib.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *script;
typedef struct { int id; char out[256]; } job;

static void *run(void *arg) {
    job *j = (job *)arg;
    lua_State *L = luaL_newstate();
    luaL_openlibs(L);
    if (fastnn_lua_open(L) != 0 || luaL_loadfile(L, script) != 0) {
        snprintf(j->out, sizeof j->out, "error: %s", lua_tostring(L, -1) ? lua_tostring(L, -1) : "open");
    } else {
        lua_pushinteger(L, j->id);
        if (lua_pcall(L, 1, 1, 0) != 0) snprintf(j->out, sizeof j->out, "error: %s", lua_tostring(L, -1));
        else snprintf(j->out, sizeof j->out, "%s", lua_tostring(L, -1));
    }
    lua_close(L);
    return NULL;
}

int main(int argc, char **argv) {
    enum { THREADS = 4 };
    pthread_t t[THREADS];
    job jobs[THREADS];
    if (argc < 2) return 2;
    script = argv[1];
    for (int i = 0; i < THREADS; i++) {
        jobs[i].id = i + 1;
        if (pthread_create(&t[i], NULL, run, &jobs[i]) != 0) return 3;
    }
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < THREADS; i++) printf("thread %d: %s\n", jobs[i].id, jobs[i].out);
    return 0;
}
]]

-- the models, as the threads build them (the weights come from the files)
local MODELS = [[
local function models(nn)
   local seq = nn.Sequential(nn.Conv2D(4, 3, {padding = 'same', activation = 'relu'}), nn.BatchNormalization(),
                             nn.Flatten(), nn.Dense(8, 'tanh'), nn.Dense(3)):build{2, 1, 6, 6}
   local b = nn.GraphBuilder()
   local x = b:input{2, 5}
   local h = b:add(nn.Dense(5, 'relu'), {x})
   local graph = b:build{b:add(nn.Dense(2), {b:add(nn.Add(), {x, h})})}
   return seq, graph
end
]]

local WORKER = MODELS .. [[
local id = ...
local fnn = require 'fastnn'
local seq, graph = models(fnn.nn)
seq:load_weights(SEQ_PATH)
graph:load_weights(GRAPH_PATH)
local xs = fnn.arange(0, 5 * 36):float():reshape(5, 1, 6, 6) / 180
local xg = fnn.arange(0, 35):float():reshape(7, 5) / 35 - 0.5
local a, b
for _ = 1, 30 do   -- many calls, so the threads overlap
   a = seq:predict(xs, {batch_size = 2}):sum():item()
   b = graph:predict{xg}[1]:sum():item()
end
return ('%.9g %.9g'):format(a, b)
]]

describe('predict from several threads', function()
   it('gives the same figures in 4 threads at once as here', function()
      fnn.manual_seed(41)
      local models = assert(loadstring(MODELS .. ' return models'))()
      local seq, graph = models(nn)
      seq:compile{optimizer = 'adam', loss = 'mse'}
      seq:fit(fnn.randn(6, 1, 6, 6), fnn.randn(6, 3), {epochs = 2, batch_size = 3, verbose = 0})  -- moves BN stats
      local base = os.tmpname()
      local seq_path, graph_path = base .. '-seq.fdl', base .. '-graph.fdl'
      seq:save_weights(seq_path)
      graph:save_weights(graph_path)
      local xs = fnn.arange(0, 5 * 36):float():reshape(5, 1, 6, 6) / 180
      local xg = fnn.arange(0, 35):float():reshape(7, 5) / 35 - 0.5
      local want = ('%.9g %.9g'):format(seq:predict(xs, {batch_size = 2}):sum():item(),
                                        graph:predict{xg}[1]:sum():item())

      local worker = base .. '-worker.lua'
      write_file(worker, ('local SEQ_PATH, GRAPH_PATH = %q, %q\n'):format(seq_path, graph_path) .. WORKER)
      write_file(base .. '-host.c', HOST)
      local host = base .. '-host'
      local compile = run(('cc -O1 $FASTNN_HOST_CFLAGS -o %s %s -I%s/bin $(pkg-config --cflags luajit) %s/libfastnn_host.a '
                           .. '$(pkg-config --libs luajit) -lm -ldl -lpthread'):format(
                           quote(host), quote(base .. '-host.c'), quote(cwd), quote(build_dir)))
      assert.matches('rc=0\n$', compile)
      local out = run(('FASTNN_LIB=%s FASTNN_LUA_DIR=%s timeout 120 %s %s'):format(
         quote(lib), quote(cwd .. '/lua'), quote(host), quote(worker)))
      for _, p in ipairs{seq_path, graph_path, worker, base .. '-host.c', host, base} do os.remove(p) end
      assert.matches("rc=0\n$", out)
      for id = 1, 4 do
         assert.matches(('thread %d: %s\n'):format(id, want), out, 1, true)
      end
   end)
end)
