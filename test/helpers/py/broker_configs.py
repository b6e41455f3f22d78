"""kafka-python's admin: alter (AlterConfigs, replace semantics) then describe one BROKER resource.

stdin: {"bootstrap": "...", "broker": "0", "alter": {key: value} or null, "describe": [keys]}
stdout: one JSON line {"alter": [error_code, error_message] or null, "describe": {name: [value, source, read_only, sensitive]}}
"""
import json
import sys

from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

req = json.load(sys.stdin)
admin = KafkaAdminClient(bootstrap_servers=req["bootstrap"], client_id="py-configs")
out = {"alter": None, "describe": {}}
if req.get("alter") is not None:
    res = admin.alter_configs([ConfigResource(ConfigResourceType.BROKER, req["broker"], configs=req["alter"])])
    r = res.resources[0]
    out["alter"] = [r[0], r[1]]
# DescribeConfigs v1 (sources) through the admin client's own request, as kafka-python 2.0.2 sends it
res = admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, req["broker"], configs={k: None for k in req["describe"]})])
for r in res:
    for resource in r.resources:
        for entry in resource[4]:
            name, value, read_only, source_or_default, sensitive = entry[0], entry[1], entry[2], entry[3], entry[4]
            out["describe"][name] = [value, source_or_default, read_only, sensitive]
admin.close()
print(json.dumps(out))
