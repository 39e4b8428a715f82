-- The checkout itself: no two tracked files may differ only by case, or a clone on a
-- case-insensitive file system (macOS, Windows) holds one of them only (Conv2D.lua and Conv2d.lua
-- did; the Keras spellings now have no file: they are entries of lua/fastnn/nn/init.lua's table,
-- defined in keras_layers.lua or the same class as a PyTorch-style one).
describe('the checkout', function()
   it('has no two tracked files whose paths differ only by case', function()
      local p = assert(io.popen('git ls-files 2>/dev/null'))
      local seen, clashes, count = {}, {}, 0
      for path in p:lines() do
         count = count + 1
         local key = path:lower()
         if seen[key] and seen[key] ~= path then clashes[#clashes + 1] = seen[key] .. " and " .. path end
         seen[key] = path
      end
      p:close()
      assert.is_true(count > 100, 'git ls-files listed ' .. count .. ' files: not a git checkout?')
      assert.same({}, clashes)
   end)

   it('finds a Keras spelling and its PyTorch-style class as two different things where they are', function()
      local nn = require('fastnn').nn
      assert.is_not_nil(nn.Conv2D)
      assert.is_not_nil(nn.Conv2d)
      assert.are_not.equal(nn.Conv2D, nn.Conv2d)
      assert.equals(nn.UpSampling2d, nn.UpSampling2D)
   end)
end)
