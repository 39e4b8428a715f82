-- tools/options_doc.lua: docs/options.md, the options reference, written from the declarations
-- (fastnn.options' registry), so the reference and the checks cannot disagree.
--   FASTNN_LIB=build/libfastnn.so luajit tools/options_doc.lua          -- rewrites docs/options.md
-- spec/options_spec.lua renders it again and fails when the committed file differs.
package.path = 'lua/?.lua;lua/?/init.lua;' .. package.path
local fnn = require 'fastnn'
local options = require 'fastnn.options'

local M = {}

-- every module that declares options, loaded: nn's classes by name (nn._names lists them all),
-- the other packages' files
function M.load_all()
   for _, name in ipairs(fnn.nn._names) do local _ = fnn.nn[name] end
   for f in io.popen('ls lua/fastnn/optim/*.lua lua/fastnn/data/*.lua lua/fastnn/keras/*.lua'):lines() do
      require((f:gsub('^lua/', ''):gsub('%.lua$', ''):gsub('/', '.')))
   end
   for _, m in ipairs{'fastnn.serialize', 'fastnn.plot', 'fastnn.image', 'fastnn.distributed', 'fastnn.initializers',
                      'fastnn.autograd', 'fastnn.serve', 'fastnn.tensorboard', 'fastnn.onnx'} do require(m) end
end

-- the sections, in order: a name's first matching prefix places it
local SECTIONS = {
   {'Layers', function(n) return n:match('^nn%.%u') and not n:match('Loss$') and not n:match('Entropy$')
      and not n:match('^nn%.Mean%a+Error$') and not n:match('^nn%.Sampler') and not n:match('^nn%.BeamSearch') end},
   {'Losses', function(n) return n:match('^nn%.%u') ~= nil and not n:match('^nn%.Sampler')
      and not n:match('^nn%.BeamSearch') end},
   {'Decoding', function(n) return n == 'nn.Sampler' or n == 'nn.BeamSearch' end},
   {'Metrics', function(n) return n:match('^nn%.metrics%.') ~= nil end},
   {'Callbacks', function(n) return n:match('^nn%.callbacks%.') ~= nil end},
   {'Keras-style models', function(n) return n:match('^model:') ~= nil end},
   {'Optimizers', function(n) return n:match('^optim%.') ~= nil and not n:match('Annealing$') and not n:match('Decay$')
      and not n:match('OneCycle$') and not n:match('Plateau$') end},
   {'Schedules', function(n) return n:match('^optim%.') ~= nil end},
   {'Data', function(n) return n:match('^data%.') ~= nil end},
   {'Checkpoints and safetensors', function(n) return n:match('^fnn%.') ~= nil and n ~= 'fnn.gradcheck' end},
   {'Pictures', function(n) return n:match('^plot%.') ~= nil or n:match('^image%.') ~= nil end},
   {'Exchange formats', function(n) return n:match('^tensorboard%.') ~= nil or n:match('^onnx%.') ~= nil end},
   {'Distributed', function(n) return n:match('^distributed%.') ~= nil end},
   {'Serving', function(n) return n:match('^serve%.') ~= nil end},
   {'Tensor ops', function(n) return n:match('^Tensor%.') ~= nil end},
   {'Modules, graphs and initializers', function(n)
      return n:match('^Module:') or n:match('^GraphBuilder:') or n:match('^init%.') or n == 'fnn.gradcheck' end},
}

local function cell(s) return (tostring(s):gsub('|', '\\|'):gsub('\n', ' ')) end

local function show_default(o)
   if o.default_doc then return o.default_doc end
   if o.default == nil then return '' end
   if type(o.default) == 'string' then return "'" .. o.default .. "'" end
   if type(o.default) == 'table' then
      local parts = {}
      for i, v in ipairs(o.default) do parts[i] = tostring(v) end
      return '{' .. table.concat(parts, ', ') .. '}'
   end
   return tostring(o.default)
end

local function show_allowed(d, o)
   if o.values then
      local q = {}
      for i, v in ipairs(o.values) do q[i] = "'" .. v .. "'" end
      return table.concat(q, ', ')
   end
   return d.range(o)
end

function M.render()
   M.load_all()
   local names = {}
   for _, n in ipairs(options.order) do names[#names + 1] = n end
   table.sort(names)
   local placed, out = {}, {}
   out[#out + 1] = '# Options reference'
   out[#out + 1] = ''
   out[#out + 1] = 'Written by `tools/options_doc.lua` from the declarations that check every call '
      .. '(`lua/fastnn/options.lua`); do not edit by hand. An option not listed for a callable is refused, '
      .. 'naming the nearest known ones; a value of the wrong type, out of its range or not one of its values '
      .. 'is refused, naming the option and the value.'
   for _, sec in ipairs(SECTIONS) do
      local mine = {}
      for _, n in ipairs(names) do
         if not placed[n] and sec[2](n) then
            placed[n] = true
            mine[#mine + 1] = n
         end
      end
      if #mine > 0 then
         out[#out + 1] = ''
         out[#out + 1] = '## ' .. sec[1]
         for _, n in ipairs(mine) do
            local d = options.registry[n]
            out[#out + 1] = ''
            out[#out + 1] = '### `' .. n .. '`'
            out[#out + 1] = ''
            out[#out + 1] = '| option | type | default | values | |'
            out[#out + 1] = '|---|---|---|---|---|'
            for _, o in ipairs(d.entries) do
               out[#out + 1] = ('| `%s` | %s | %s | %s | %s |'):format(o.name, cell(o.types:gsub('|', ' or ')),
                  cell(show_default(o)), cell(show_allowed(d, o)), cell(o.doc))
            end
         end
      end
   end
   for _, n in ipairs(names) do assert(placed[n], n .. ' has no section in tools/options_doc.lua') end
   return table.concat(out, '\n') .. '\n'
end

if arg and arg[0] and arg[0]:match('options_doc%.lua$') then
   local text = M.render()
   local f = assert(io.open('docs/options.md', 'w'))
   f:write(text)
   f:close()
   print(('docs/options.md: %d callables'):format(#options.order))
end

return M
