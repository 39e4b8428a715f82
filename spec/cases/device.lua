-- Gradcheck cases for core/device.c: a copy to the GPU and back. Without a
-- GPU the gradcheck spec asserts instead that cuda:0 reports why it is absent.
local fnn = require 'fastnn'

return {
   {op = 'to_device', requires = 'cuda', inputs = function() return fnn.randn(3, 4) end,
    fn = function(x) return (x:to('cuda:0') * 2):to('cpu') end},
}
