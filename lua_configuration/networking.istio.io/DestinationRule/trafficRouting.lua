-- Istio DestinationRule: adds the "canary" subset that a VirtualService routes to when the canary shares
-- the stable Service (pair with disableGenerateCanaryService and patchPodTemplateMetadata labels).
--
-- obj.data                     {spec, labels, annotations} of the DestinationRule before any release
-- obj.patchPodMetadata.labels  optional labels selecting the canary pods; istio.service.tag=gray otherwise
-- Returns {spec, labels, annotations}. A subset already named canary is kept as it is.

local spec = obj.data.spec
spec.subsets = spec.subsets or {}
for _, subset in ipairs(spec.subsets) do
  if subset.name == "canary" then
    return obj.data
  end
end

local labels = {["istio.service.tag"] = "gray"}
if obj.patchPodMetadata and obj.patchPodMetadata.labels and next(obj.patchPodMetadata.labels) ~= nil then
  labels = obj.patchPodMetadata.labels
end
table.insert(spec.subsets, {name = "canary", labels = labels})

return obj.data
