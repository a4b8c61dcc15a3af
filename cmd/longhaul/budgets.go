package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/internal/budget"
	"github.com/longhaul-dev/longhaul/internal/config"
)

// openLedger opens the usage ledger on LONGHAUL_DATABASE_URL, beside the
// other stores, with LONGHAUL_BUDGETS and LONGHAUL_MODEL_PRICES (checked
// by config.Validate).
func openLedger(ctx context.Context, cfg config.Config, log *slog.Logger) (*budget.Ledger, error) {
	limits, _ := budget.ParseBudgets(cfg.Budgets)
	prices, _ := budget.ParsePrices(cfg.ModelPrices)
	// Calls are priced by the model they resolve to ("remote:gpt-4o"),
	// never as a request typed it: the prices are keyed alike.
	if set, err := cfg.ModelEndpoints(); err == nil {
		prices = prices.Canonical(set.Canonical)
	}
	l, err := budget.Open(ctx, cfg.DatabaseURL, limits, prices)
	if err != nil {
		return nil, fmt.Errorf("LONGHAUL_DATABASE_URL (usage ledger): %w", err)
	}
	if len(limits) > 0 {
		log.Info("model spend is held to budgets", "budgets", len(limits), "priced_models", len(prices))
	}
	return l, nil
}

// spendOn opens the usage ledger (openLedger) and gives the activities it
// and the budgets' settings. The caller closes the ledger.
func spendOn(ctx context.Context, a *activities.Activities, cfg config.Config, log *slog.Logger) (*budget.Ledger, error) {
	l, err := openLedger(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	a.Spend = l
	a.BudgetOutputTokens = cfg.BudgetOutputTokens
	a.MetricsPrincipal = cfg.MetricsPrincipal
	return l, nil
}
