-- common.pictures: where the examples put their pictures, and the two pictures every classifier
-- draws (drawn by fnn.plot, written as PNG files).
--   local pictures = require 'common.pictures'
--   local path = pictures.path(opts, 'mnist_mlp_loss.png')     -- opts.out/..., the directory made
--   pictures.loss_curves(path, {train = {...}, validation = {...}})
--   pictures.confusion(pictures.path(opts, 'mnist_mlp_confusion.png'), matrix, classes)
-- Every picture is announced as one line `wrote <path>` (spec/examples_spec.lua reads those lines).
local plot = require 'fastnn.plot'

local M = {}

local function quote(s) return "'" .. s:gsub("'", [['\'']]) .. "'" end

-- opts.out .. '/' .. file, after making the directory
function M.path(opts, file)
   local dir = opts.out
   local status = os.execute('mkdir -p ' .. quote(dir))
   if status ~= 0 and status ~= true then error(('cannot make the directory %s'):format(dir), 2) end
   return dir .. '/' .. file
end

function M.wrote(path)
   print('wrote ' .. path)
   return path
end

-- curves: {train = {y per epoch}, validation = {...}} (either may be missing), x = epochs 1..n;
-- opts: title, xlabel, ylabel, logy
function M.loss_curves(path, curves, opts)
   opts = opts or {}
   local series = {}
   for _, name in ipairs{'train', 'validation'} do
      local y = curves[name]
      if y and #y > 0 then series[#series + 1] = {name = name, x = curves.x, y = y} end
   end
   plot.line{path = path, title = opts.title or 'loss', xlabel = opts.xlabel or 'epoch',
             ylabel = opts.ylabel or 'loss', logy = opts.logy, series = series}
   return M.wrote(path)
end

-- matrix: rows of counts, row = true class, column = predicted class
function M.confusion(path, matrix, classes, opts)
   opts = opts or {}
   plot.heatmap{path = path, matrix = matrix, row_labels = classes, col_labels = classes,
                title = opts.title or 'confusion matrix', xlabel = 'predicted', ylabel = 'true',
                annotate = true}
   return M.wrote(path)
end

return M
