module github.com/floodgate-go/floodgate/bench

go 1.26

replace github.com/floodgate-go/floodgate => ../
