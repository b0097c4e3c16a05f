package truncate // import "code.cloudfoundry.org/lager/v3/internal/truncate"
