"""A stand-in for the names of Airflow the recipe imports (README.md)."""
