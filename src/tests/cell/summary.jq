# One scenario's summary from its recorded expectations (the slurped
# expect.jsonl) and the declared list (expectations.json, $declared[0]):
# every declared expectation it did not record is added as failed, so a
# scenario that stopped early fails; it never counts as ok.
#   jq -s --arg name S/SC --arg shape S --arg sc SC --slurpfile declared expectations.json -f summary.jq F.expect.jsonl
($declared[0].scenarios[$sc] // null) as $want
| ($want + ($declared[0].shapes[$shape] // [])) as $all
| (map(.id)) as $got
| . + [($all // [])[] | select(. as $id | $got | index($id) | not)
       | {id: ., ok: false, detail: "never recorded: the scenario stopped before this expectation"}]
| . + (if $want == null then [{id: "declared", ok: false, detail: "scenario \($sc) has no declared expectations in src/tests/cell/expectations.json"}] else [] end)
| {name: $name, shape: $shape, scenario: $sc, ok: (length > 0 and all(.[]; .ok)), expectations: .}
