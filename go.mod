module github.com/shardgate/shardgate

go 1.26

require (
	github.com/tidwall/redcon v1.6.4
	go.uber.org/goleak v1.3.0
	pgregory.net/rapid v1.3.0
)

require (
	github.com/tidwall/btree v1.1.0 // indirect
	github.com/tidwall/match v1.1.1 // indirect
)
