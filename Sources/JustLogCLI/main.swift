print("justlog")
