-- The RustyML seed's two programs (examples/keras_sequential.lua, examples/keras_graph.lua), run
-- as child processes: they build, train 5 epochs (one line each without a terminal) and print
-- the prediction shape.
local function run(script)
   local p = io.popen(("LUA_PATH='./lua/?.lua;./lua/?/init.lua;;' FASTNN_PROGRESS=line timeout 60 luajit %s 2>&1; echo rc=$?")
                      :format(script))
   local out = p:read('*a')
   p:close()
   return out
end

for _, name in ipairs{'keras_sequential', 'keras_graph'} do
   describe('examples/' .. name, function()
      it('trains and prints the prediction shape', function()
         local out = run('examples/' .. name .. '.lua')
         assert.matches('rc=0\n$', out)
         for e = 1, 5 do assert.matches(('\nEpoch %d/5 %%- 1/1 %%- [^\n]+ %%- loss: [%%d.]+\n'):format(e), out) end
         assert.matches('\nloss after 5 epochs: [%d.]+\n', out)
         assert.matches('\nprediction shape: [8,1]\n', out, 1, true)
         assert.matches('Total params: ', out, 1, true)
      end)
   end)
end
