-- The header is the ABI: every function it declares must resolve in libfastnn,
-- and the registry must name each op once, with a Lua binding for its family.
local fnn = require 'fastnn'
local C = require 'fastnn.C'

describe('the C ABI', function()
   local cdef = require 'fastnn.cdef'
   local names = {}
   for name in cdef:gmatch('[%w_%*%s]+[%s%*](fnn_[%w_]+)%s*%(') do names[#names + 1] = name end

   it('declares a healthy number of entry points', function()
      assert.is_true(#names > 150, 'only ' .. #names .. ' functions parsed from fastnn.h')
   end)

   it('resolves every declared function in the library', function()
      local missing = {}
      for _, name in ipairs(names) do
         local ok = pcall(function() return C[name] end)
         if not ok then missing[#missing + 1] = name end
      end
      assert.same({}, missing)
   end)

   it('registers each op once, each family with a Lua binding', function()
      local seen = {}
      for _, op in ipairs(fnn.ops()) do
         assert.is_nil(seen[op.name], 'op registered twice: ' .. op.name)
         seen[op.name] = true
         local mod = op.family == 'device' and 'fastnn.device' or ('fastnn.ops.' .. op.family)
         assert.truthy(package.searchpath(mod, package.path), 'no Lua binding file for family ' .. op.family)
      end
   end)

   it('reports errors through a thread-local slot with a status', function()
      local ok, err = pcall(function() return fnn.ones(2) + fnn.ones(3) end)
      assert.is_false(ok)
      assert.equals(-1, C.fnn_last_status())            -- FNN_STATUS_SHAPE
      assert.matches('core/[%w_/]+%.c:%d+$', require('ffi').string(C.fnn_last_error_where()))
   end)
end)
