"""The console's pages, one module per page (its routes, its parameters, its calls)."""
